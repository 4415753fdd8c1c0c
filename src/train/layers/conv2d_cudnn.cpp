#include "src/train/layers/conv2d_cudnn.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "conveyor/error.h"

namespace conveyor::nn {
namespace {

// The first usable candidate: it ran (or cuDNN expects it to), fits the workspace budget and, when asked,
// is deterministic. cudnnFind*Ex sorts by measured time, cudnnGet*_v7 by cuDNN's expectation.
template <class Perf>
const Perf& first_usable(const Perf* perf, int count, std::size_t budget, bool deterministic_only,
                         const std::string& layer, const char* what) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= budget &&
        (!deterministic_only || perf[i].determinism == CUDNN_DETERMINISTIC))
      return perf[i];
  throw DeviceError(layer + ": cuDNN has no " + (deterministic_only ? "deterministic " : "") + what +
                    " algorithm for this shape and precision (" + std::to_string(count) +
                    " candidates, workspace budget " + std::to_string(budget) + " bytes)");
}

// Whether `choice` names one of the direction's `count` algorithms with a math type cuDNN has. The pair is
// then put to cuDNN by asking for its workspace with that math type set (what a search returned runs that
// way: the layer sets each direction's math type to the one its search reported); cuDNN refuses there an
// algorithm it does not support for the shape. cuDNN's own listing (cudnnGet*_v7, which builds every
// candidate's engine configurations) is not asked: the file is for this exact environment (GPU, driver,
// CUDA and cuDNN versions), and that listing was most of a warm warm-up (about 0.2 s of ResNet-18's 0.6 s,
// bench/results/2026-11-24-h100-run1/).
bool known_choice(const AlgorithmChoice& choice, int count) {
  const int m = choice.math;
  return choice.algorithm >= 0 && choice.algorithm < count &&
         (m == CUDNN_DEFAULT_MATH || m == CUDNN_TENSOR_OP_MATH ||
          m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || m == CUDNN_FMA_MATH);
}

}  // namespace

Conv2dCudnn::Conv2dCudnn(CudaContext& cuda, std::string name, const ConvGeometry& geometry,
                         bool needs_input_grad)
    : Conv2d(std::move(name), geometry, needs_input_grad),
      cuda_(cuda),
      dtype_(cuda_.dtype()),
      x_desc_(make_nhwc_descriptor(geometry.input, cuda_.dtype(), this->name())),
      y_desc_(make_nhwc_descriptor(geometry.output(), cuda_.dtype(), this->name())) {
  const ConvGeometry& g = this->geometry();
  CONVEYOR_CUDNN(cudnnSetFilter4dDescriptor(w_desc_.get(), cudnn_type(dtype_), CUDNN_TENSOR_NHWC,
                                            g.out_channels, g.input.c, g.kernel, g.kernel),
                 this->name());
  for (const ConvolutionDescriptor* d : {&forward_desc_, &backward_data_desc_, &backward_filter_desc_})
    CONVEYOR_CUDNN(cudnnSetConvolution2dDescriptor(d->get(), g.pad, g.pad, g.stride, g.stride, 1, 1,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                   this->name());
  reset_math_types();
}

void Conv2dCudnn::reset_math_types() {
  // Accumulation in fp32 for every storage type (cuDNN's PSEUDO_HALF / BFLOAT16 configurations).
  const cudnnMathType_t math = dtype_ == DType::f32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH;
  for (const ConvolutionDescriptor* d : {&forward_desc_, &backward_data_desc_, &backward_filter_desc_})
    CONVEYOR_CUDNN(cudnnSetConvolutionMathType(d->get(), math), name());
}

void Conv2dCudnn::prepare(const Tensor& x, const void* w, const Tensor& y, const Tensor& dx, void* dw) {
  auto& memory = cuda_.conv_algorithms();
  const std::string key = convolution_key(geometry(), dtype_, needs_input_grad());
  // Deterministic choices come from cuDNN's heuristics, which are quick and need no cache.
  AlgorithmCache* disk = cuda_.deterministic_algorithms() ? nullptr : cuda_.algorithm_cache();
  if (const auto found = memory.find(key); found != memory.end()) {
    algorithms_ = found->second;
  } else {
    std::optional<ConvAlgorithms> chosen;
    if (disk) {
      if (const ConvolutionChoices* cached = disk->find(key)) {
        std::string why;
        bool refused = false;
        chosen = accept_cached(*cached, cuda_.workspace_budget(), why, refused);
        if (chosen)
          ++disk->counts().reused;
        else if (refused)
          disk->reject(key, name() + " (" + key + "): " + why);
      }
    }
    if (!chosen) {
      chosen = search(x, w, y, dx, dw);
      if (disk) {
        ++disk->counts().searched;
        ConvolutionChoices c;
        c.forward = {static_cast<int>(chosen->forward), static_cast<int>(chosen->forward_math),
                     chosen->forward_bytes, chosen->forward_ms};
        c.backward_filter = {static_cast<int>(chosen->backward_filter),
                             static_cast<int>(chosen->backward_filter_math), chosen->backward_filter_bytes,
                             chosen->backward_filter_ms};
        if (chosen->has_backward_data)
          c.backward_data = AlgorithmChoice{static_cast<int>(chosen->backward_data),
                                            static_cast<int>(chosen->backward_data_math),
                                            chosen->backward_data_bytes, chosen->backward_data_ms};
        c.search_budget = cuda_.workspace_budget();
        disk->store(key, c);
      }
    }
    algorithms_ = *chosen;
    memory.emplace(key, algorithms_);
  }
  // fp32 stays on FMA math whatever the search reports, so that no direction silently uses TF32.
  if (dtype_ != DType::f32) {
    CONVEYOR_CUDNN(cudnnSetConvolutionMathType(forward_desc_.get(), algorithms_.forward_math), name());
    CONVEYOR_CUDNN(cudnnSetConvolutionMathType(backward_filter_desc_.get(), algorithms_.backward_filter_math),
                   name());
    if (needs_input_grad())
      CONVEYOR_CUDNN(cudnnSetConvolutionMathType(backward_data_desc_.get(), algorithms_.backward_data_math),
                     name());
  }
  cuda_.require_workspace(std::max({algorithms_.forward_bytes, algorithms_.backward_filter_bytes,
                                    needs_input_grad() ? algorithms_.backward_data_bytes : std::size_t{0}}));
  ready_ = true;
}

std::optional<ConvAlgorithms> Conv2dCudnn::accept_cached(const ConvolutionChoices& cached, std::size_t budget,
                                                         std::string& why, bool& refused) {
  refused = false;
  if (cached.backward_data.has_value() != needs_input_grad()) {
    refused = true;
    why = "the entry does not have the directions this layer runs";
    return std::nullopt;
  }
  if (cached.search_budget < budget) {
    why = "searched with " + std::to_string(cached.search_budget) + " bytes of workspace, " +
          std::to_string(budget) + " available now";
    return std::nullopt;
  }
  // 16-bit types run the math type the search reported; fp32 stays on FMA math (no TF32) whatever was stored.
  auto math_for = [&](const AlgorithmChoice& c) {
    return dtype_ != DType::f32 ? static_cast<cudnnMathType_t>(c.math) : CUDNN_FMA_MATH;
  };
  ConvAlgorithms a;
  a.from_disk = true;
  std::string problem;
  auto check = [&](const char* direction, bool listed, const AlgorithmChoice& c, cudnnStatus_t sized,
                   std::size_t bytes) {
    if (!problem.empty()) return;
    if (!listed)
      problem = std::string(direction) + " algorithm " + std::to_string(c.algorithm) + " (math " +
                std::to_string(c.math) + ") is not one of cuDNN's, or the math type is unknown";
    else if (sized != CUDNN_STATUS_SUCCESS)
      problem = std::string(direction) + " algorithm " + std::to_string(c.algorithm) +
                ": cuDNN sizes no workspace for it (" + cudnnGetErrorString(sized) + ")";
    else if (bytes > budget)
      why = std::string(direction) + " algorithm " + std::to_string(c.algorithm) + " needs " +
            std::to_string(bytes) + " bytes of workspace, " + std::to_string(budget) + " available now";
  };
  {
    const AlgorithmChoice& c = cached.forward;
    const bool listed = known_choice(c, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    cudnnStatus_t sized = CUDNN_STATUS_NOT_SUPPORTED;
    if (listed) {
      CONVEYOR_CUDNN(cudnnSetConvolutionMathType(forward_desc_.get(), math_for(c)), name());
      a.forward = static_cast<cudnnConvolutionFwdAlgo_t>(c.algorithm);
      a.forward_math = math_for(c);
      sized = cudnnGetConvolutionForwardWorkspaceSize(cuda_.cudnn(), x_desc_.get(), w_desc_.get(),
                                                      forward_desc_.get(), y_desc_.get(), a.forward,
                                                      &a.forward_bytes);
      a.forward_ms = c.ms;
    }
    check("forward", listed, c, sized, a.forward_bytes);
  }
  {
    const AlgorithmChoice& c = cached.backward_filter;
    const bool listed = known_choice(c, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    cudnnStatus_t sized = CUDNN_STATUS_NOT_SUPPORTED;
    if (listed) {
      CONVEYOR_CUDNN(cudnnSetConvolutionMathType(backward_filter_desc_.get(), math_for(c)), name());
      a.backward_filter = static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algorithm);
      a.backward_filter_math = math_for(c);
      sized = cudnnGetConvolutionBackwardFilterWorkspaceSize(cuda_.cudnn(), x_desc_.get(), y_desc_.get(),
                                                             backward_filter_desc_.get(), w_desc_.get(),
                                                             a.backward_filter, &a.backward_filter_bytes);
      a.backward_filter_ms = c.ms;
    }
    check("backward-filter", listed, c, sized, a.backward_filter_bytes);
  }
  if (needs_input_grad()) {
    const AlgorithmChoice& c = *cached.backward_data;
    const bool listed = known_choice(c, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    cudnnStatus_t sized = CUDNN_STATUS_NOT_SUPPORTED;
    if (listed) {
      CONVEYOR_CUDNN(cudnnSetConvolutionMathType(backward_data_desc_.get(), math_for(c)), name());
      a.backward_data = static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algorithm);
      a.backward_data_math = math_for(c);
      sized = cudnnGetConvolutionBackwardDataWorkspaceSize(cuda_.cudnn(), w_desc_.get(), y_desc_.get(),
                                                           backward_data_desc_.get(), x_desc_.get(),
                                                           a.backward_data, &a.backward_data_bytes);
      a.backward_data_ms = c.ms;
    }
    check("backward-data", listed, c, sized, a.backward_data_bytes);
    a.has_backward_data = true;
  }
  reset_math_types();  // choose_algorithms() sets the chosen ones; a search must start from these
  if (!problem.empty()) {
    refused = true;
    why = problem;
    return std::nullopt;
  }
  if (!why.empty()) return std::nullopt;  // fits no more: not wrong, only too large for now
  return a;
}

ConvAlgorithms Conv2dCudnn::search(const Tensor& x, const void* w, const Tensor& y, const Tensor& dx,
                                   void* dw) {
  const auto [scratch, budget] = cuda_.search_workspace();
  // Deterministic: cuDNN's heuristic order, which depends only on the shape and the card, so every run
  // takes the same algorithms. Otherwise: timed on these tensors, the fastest that fits.
  const bool heuristic = cuda_.deterministic_algorithms();
  ConvAlgorithms a;
  {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int count = 0;
    if (heuristic) {
      CONVEYOR_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(cuda_.cudnn(), x_desc_.get(), w_desc_.get(),
                                                            forward_desc_.get(), y_desc_.get(),
                                                            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
                     name() + " (algorithm heuristics, forward)");
    } else {
      CONVEYOR_CUDNN(
          cudnnFindConvolutionForwardAlgorithmEx(
              cuda_.cudnn(), x_desc_.get(), x.data, w_desc_.get(), w, forward_desc_.get(), y_desc_.get(),
              y.data, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf, scratch, budget),
          name() + " (algorithm search, forward)");
    }
    const auto& best = first_usable(perf, count, budget, heuristic, name(), "forward");
    a.forward = best.algo, a.forward_math = best.mathType, a.forward_bytes = best.memory;
    a.forward_ms = heuristic ? -1.f : best.time;
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int count = 0;
    if (heuristic) {
      CONVEYOR_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                         cuda_.cudnn(), x_desc_.get(), y_desc_.get(), backward_filter_desc_.get(),
                         w_desc_.get(), CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf),
                     name() + " (algorithm heuristics, backward filter)");
    } else {
      // y stands in for dy: same shape, and only the timing matters here.
      CONVEYOR_CUDNN(
          cudnnFindConvolutionBackwardFilterAlgorithmEx(
              cuda_.cudnn(), x_desc_.get(), x.data, y_desc_.get(), y.data, backward_filter_desc_.get(),
              w_desc_.get(), dw, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf, scratch, budget),
          name() + " (algorithm search, backward filter)");
    }
    const auto& best = first_usable(perf, count, budget, heuristic, name(), "backward-filter");
    a.backward_filter = best.algo, a.backward_filter_math = best.mathType;
    a.backward_filter_bytes = best.memory, a.backward_filter_ms = heuristic ? -1.f : best.time;
  }
  if (needs_input_grad()) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int count = 0;
    if (heuristic) {
      CONVEYOR_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                         cuda_.cudnn(), w_desc_.get(), y_desc_.get(), backward_data_desc_.get(),
                         x_desc_.get(), CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf),
                     name() + " (algorithm heuristics, backward data)");
    } else {
      CONVEYOR_CUDNN(
          cudnnFindConvolutionBackwardDataAlgorithmEx(
              cuda_.cudnn(), w_desc_.get(), w, y_desc_.get(), y.data, backward_data_desc_.get(),
              x_desc_.get(), dx.data, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf, scratch, budget),
          name() + " (algorithm search, backward data)");
    }
    const auto& best = first_usable(perf, count, budget, heuristic, name(), "backward-data");
    a.backward_data = best.algo, a.backward_data_math = best.mathType;
    a.backward_data_bytes = best.memory, a.backward_data_ms = heuristic ? -1.f : best.time;
    a.has_backward_data = true;
  }
  return a;
}

void Conv2dCudnn::require_ready() const {
  if (!ready_) throw InvalidArgument(name() + ": prepare() the layer before running it");
}

void Conv2dCudnn::forward(const Tensor& x, const void* w, const Tensor& y) const {
  require_ready();
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(cudnnConvolutionForward(cuda_.cudnn(), &one, x_desc_.get(), x.data, w_desc_.get(), w,
                                         forward_desc_.get(), algorithms_.forward, cuda_.workspace(),
                                         cuda_.workspace_bytes(), &zero, y_desc_.get(), y.data),
                 name() + " (forward)");
}

void Conv2dCudnn::run_backward_data(const Tensor& dy, const void* w, const Tensor& dx,
                                    bool accumulate) const {
  require_ready();
  const float one = 1.f, beta = accumulate ? 1.f : 0.f;
  CONVEYOR_CUDNN(
      cudnnConvolutionBackwardData(cuda_.cudnn(), &one, w_desc_.get(), w, y_desc_.get(), dy.data,
                                   backward_data_desc_.get(), algorithms_.backward_data, cuda_.workspace(),
                                   cuda_.workspace_bytes(), &beta, x_desc_.get(), dx.data),
      name() + " (backward data)");
}

void Conv2dCudnn::backward_filter(const Tensor& x, const Tensor& dy, void* dw) const {
  require_ready();
  const float one = 1.f, zero = 0.f;
  CONVEYOR_CUDNN(
      cudnnConvolutionBackwardFilter(cuda_.cudnn(), &one, x_desc_.get(), x.data, y_desc_.get(), dy.data,
                                     backward_filter_desc_.get(), algorithms_.backward_filter,
                                     cuda_.workspace(), cuda_.workspace_bytes(), &zero, w_desc_.get(), dw),
      name() + " (backward filter)");
}

std::string Conv2dCudnn::algorithms() const {
  const char* origin = algorithms_.from_disk ? ", cached" : "";
  const auto one = [origin](const char* what, int algo, float ms) {
    char text[96];
    if (ms < 0)
      std::snprintf(text, sizeof text, "%s algo %d (heuristic, deterministic)", what, algo);
    else
      std::snprintf(text, sizeof text, "%s algo %d (%.3f ms%s)", what, algo, ms, origin);
    return std::string(text);
  };
  const ConvAlgorithms& a = algorithms_;
  std::string s = one("fwd", static_cast<int>(a.forward), a.forward_ms) + ", " +
                  one("bwd-filter", static_cast<int>(a.backward_filter), a.backward_filter_ms);
  if (a.has_backward_data) s += ", " + one("bwd-data", static_cast<int>(a.backward_data), a.backward_data_ms);
  return s;
}

}  // namespace conveyor::nn
