#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.h"

namespace own_model {
namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}
void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(status));
}

float* device_floats(std::size_t count, cudaStream_t stream) {
  void* memory = nullptr;
  check(cudaMallocAsync(&memory, count * sizeof(float), stream), "cudaMallocAsync");
  check(cudaMemsetAsync(memory, 0, count * sizeof(float), stream), "cudaMemsetAsync");
  return static_cast<float*>(memory);
}

// y[r][c] = max(0, y[r][c] + bias[c])
__global__ void add_bias_relu(float* y, const float* bias, int rows, int columns, bool relu) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= rows * columns) return;
  const float v = y[i] + bias[i % columns];
  y[i] = relu ? fmaxf(v, 0.f) : v;
}

// Softmax cross-entropy per row: adds the row's loss to *loss and leaves (softmax - onehot) / rows in logits.
__global__ void softmax_cross_entropy(float* logits, const std::int64_t* labels, int rows, int classes,
                                      float* loss) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float* z = logits + static_cast<std::size_t>(r) * classes;
  float top = z[0];
  for (int c = 1; c < classes; ++c) top = fmaxf(top, z[c]);
  float sum = 0;
  for (int c = 0; c < classes; ++c) sum += expf(z[c] - top);
  const int label = static_cast<int>(labels[r]);
  atomicAdd(loss, logf(sum) - (z[label] - top));
  for (int c = 0; c < classes; ++c) z[c] = (expf(z[c] - top) / sum - (c == label ? 1.f : 0.f)) / rows;
}

// dh *= (h > 0)
__global__ void relu_backward(float* dh, const float* h, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count && h[i] <= 0.f) dh[i] = 0.f;
}

// db[c] = sum over rows of d[r][c]
__global__ void column_sums(const float* d, float* db, int rows, int columns) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= columns) return;
  float s = 0;
  for (int r = 0; r < rows; ++r) s += d[static_cast<std::size_t>(r) * columns + c];
  db[c] = s;
}

__global__ void sgd(float* w, const float* dw, int count, float learning_rate) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) w[i] -= learning_rate * dw[i];
}

int blocks(int count) { return (count + 255) / 256; }

}  // namespace

Mlp::Mlp(int inputs, int hidden, int classes, int max_batch, cudaStream_t stream, std::uint64_t seed)
    : inputs_(inputs), hidden_(hidden), classes_(classes), max_batch_(max_batch), stream_(stream) {
  check(cublasCreate(&blas_), "cublasCreate");
  check(cublasSetStream(blas_, stream_), "cublasSetStream");
  w1_ = device_floats(static_cast<std::size_t>(hidden) * inputs, stream);
  b1_ = device_floats(hidden, stream);
  w2_ = device_floats(static_cast<std::size_t>(classes) * hidden, stream);
  b2_ = device_floats(classes, stream);
  h_ = device_floats(static_cast<std::size_t>(max_batch) * hidden, stream);
  logits_ = device_floats(static_cast<std::size_t>(max_batch) * classes, stream);
  dh_ = device_floats(static_cast<std::size_t>(max_batch) * hidden, stream);
  dw1_ = device_floats(static_cast<std::size_t>(hidden) * inputs, stream);
  db1_ = device_floats(hidden, stream);
  dw2_ = device_floats(static_cast<std::size_t>(classes) * hidden, stream);
  db2_ = device_floats(classes, stream);
  loss_ = device_floats(1, stream);
  std::mt19937_64 random(seed);
  auto he = [&](float* w, int fan_in, std::size_t count) {
    std::normal_distribution<float> normal(0.f, std::sqrt(2.f / static_cast<float>(fan_in)));
    std::vector<float> host(count);
    for (float& v : host) v = normal(random);
    check(cudaMemcpyAsync(w, host.data(), count * sizeof(float), cudaMemcpyHostToDevice, stream_), "weights");
    check(cudaStreamSynchronize(stream_), "weights");
  };
  he(w1_, inputs, static_cast<std::size_t>(hidden) * inputs);
  he(w2_, hidden, static_cast<std::size_t>(classes) * hidden);
}

Mlp::~Mlp() {
  for (float* p : {w1_, b1_, w2_, b2_, h_, logits_, dh_, dw1_, db1_, dw2_, db2_, loss_})
    cudaFreeAsync(p, stream_);
  cudaStreamSynchronize(stream_);
  cublasDestroy(blas_);
}

// cuBLAS is column-major: a row-major (rows x cols) matrix is its column-major transpose, so Y = X W^T
// (row-major) is computed as Y^T = W X^T with W stored row-major (out x in) read as column-major (in x out).
void Mlp::step(const float* x, const std::int64_t* labels, int batch, float learning_rate) {
  if (batch > max_batch_) throw std::invalid_argument("Mlp::step: batch larger than the model was made for");
  const float one = 1.f, zero = 0.f;
  // Forward: h = relu(x W1^T + b1), logits = h W2^T + b2.
  check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, hidden_, batch, inputs_, &one, w1_, inputs_, x, inputs_,
                    &zero, h_, hidden_),
        "forward 1");
  add_bias_relu<<<blocks(batch * hidden_), 256, 0, stream_>>>(h_, b1_, batch, hidden_, true);
  check(cublasSgemm(blas_, CUBLAS_OP_T, CUBLAS_OP_N, classes_, batch, hidden_, &one, w2_, hidden_, h_,
                    hidden_, &zero, logits_, classes_),
        "forward 2");
  add_bias_relu<<<blocks(batch * classes_), 256, 0, stream_>>>(logits_, b2_, batch, classes_, false);
  check(cudaMemsetAsync(loss_, 0, sizeof(float), stream_), "loss");
  softmax_cross_entropy<<<blocks(batch), 256, 0, stream_>>>(logits_, labels, batch, classes_, loss_);
  // Backward: dW2 = dlogits^T h, db2 = colsum(dlogits), dh = dlogits W2 * (h > 0), dW1 = dh^T x.
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, hidden_, classes_, batch, &one, h_, hidden_, logits_,
                    classes_, &zero, dw2_, hidden_),
        "backward dW2");
  column_sums<<<blocks(classes_), 256, 0, stream_>>>(logits_, db2_, batch, classes_);
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_N, hidden_, batch, classes_, &one, w2_, hidden_, logits_,
                    classes_, &zero, dh_, hidden_),
        "backward dh");
  relu_backward<<<blocks(batch * hidden_), 256, 0, stream_>>>(dh_, h_, batch * hidden_);
  check(cublasSgemm(blas_, CUBLAS_OP_N, CUBLAS_OP_T, inputs_, hidden_, batch, &one, x, inputs_, dh_, hidden_,
                    &zero, dw1_, inputs_),
        "backward dW1");
  column_sums<<<blocks(hidden_), 256, 0, stream_>>>(dh_, db1_, batch, hidden_);
  // SGD.
  sgd<<<blocks(hidden_ * inputs_), 256, 0, stream_>>>(w1_, dw1_, hidden_ * inputs_, learning_rate);
  sgd<<<blocks(hidden_), 256, 0, stream_>>>(b1_, db1_, hidden_, learning_rate);
  sgd<<<blocks(classes_ * hidden_), 256, 0, stream_>>>(w2_, dw2_, classes_ * hidden_, learning_rate);
  sgd<<<blocks(classes_), 256, 0, stream_>>>(b2_, db2_, classes_, learning_rate);
  check(cudaGetLastError(), "Mlp::step kernels");
  last_batch_ = batch;
}

float Mlp::last_loss() {
  float sum = 0;
  check(cudaMemcpyAsync(&sum, loss_, sizeof(float), cudaMemcpyDeviceToHost, stream_), "reading the loss");
  check(cudaStreamSynchronize(stream_), "reading the loss");
  return sum / static_cast<float>(last_batch_);
}

}  // namespace own_model
