// A model's parameters in three flat float32 arrays: weights (convolution and linear filters, which also
// get a working copy in the compute precision on a GPU), vectors (batch-norm scale and shift, biases)
// and statistics (batch-norm running mean and variance). Flat arrays make SGD one kernel per group and
// a checkpoint three copies. The host copy is the reference for initialisation and checkpoints; bind()
// puts the context-side copy (device memory on a GPU) next to it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/train/nn/reference.h"
#include "src/train/layers/context.h"

namespace conveyor::train {

enum class ParamGroup : std::uint8_t { weights, vectors, statistics };
enum class ParamInit : std::uint8_t { kaiming_normal_fan_out, uniform_fan_in, ones, zeros };

// Where one tensor lives in its group's array.
struct ParamRef {
  ParamGroup group = ParamGroup::weights;
  std::size_t offset = 0;
  std::size_t count = 0;
};

struct ParamEntry {
  std::string name;  // PyTorch's state_dict key: "layer1.0.conv1.weight", "bn1.running_mean", ...
  ParamRef ref;
  ParamInit init = ParamInit::zeros;
  int fan = 0;  // fan-out of a convolution, fan-in of a linear layer
  // PyTorch's shape of the tensor: (out, in, k, k) for a convolution, (out, in) for a linear layer, (n)
  // for a vector. A convolution's filter is stored KRSC here, (out, k, k, in): checkpoints transpose it.
  std::vector<std::int64_t> shape;
  bool krsc = false;
};

class ParameterLayout {
 public:
  // shape: PyTorch's (see ParamEntry); empty: a vector of `count`. krsc: a convolution filter.
  ParamRef add(std::string name, ParamGroup group, std::size_t count, ParamInit init, int fan = 0,
               std::vector<std::int64_t> shape = {}, bool krsc = false);
  std::size_t size(ParamGroup group) const noexcept { return sizes_[static_cast<int>(group)]; }
  const std::vector<ParamEntry>& entries() const noexcept { return entries_; }

 private:
  std::vector<ParamEntry> entries_;
  std::size_t sizes_[3] = {0, 0, 0};
};

class ParameterStore {
 public:
  // Initialises the host copy from the seed: Kaiming normal (fan-out) for convolutions, PyTorch's
  // default uniform for the linear layer, batch norm at scale 1 and shift 0, statistics 0 and 1.
  ParameterStore(const ParameterLayout& layout, std::uint64_t seed);

  // Allocates the context-side arrays (parameters, gradients, momentum) and uploads the host copy.
  void bind(nn::Context& ctx);
  // Drops the context-side arrays (the host copy stays).
  void unbind() noexcept;
  // Host copy -> context (also rebuilds the working copy); context -> host copy (synchronises).
  void upload(nn::Context& ctx);
  void download(nn::Context& ctx);

  // Context-side pointers for the layers.
  void* weight(const ParamRef& r) const;       // working copy: the context's type
  void* weight_grad(const ParamRef& r) const;  // the context's type
  float* vector(const ParamRef& r) const;
  float* vector_grad(const ParamRef& r) const;
  float* statistic(const ParamRef& r) const;

  // The SGD hyper-parameters and the loss scale the gradients carry (fp16; divided out first). On a GPU
  // they go to device memory in stream order, so a captured CUDA graph reads the new values. After bind().
  void set_hyper(const nn::cpu::SgdHyper& hyper, float loss_scale);
  // One SGD step over every parameter (two kernels on a GPU).
  void sgd_step();

  // The context-side arrays, for collectives over them (data-parallel training): gradients of weights
  // (the context's type) and vectors (float32); the float32 master copy of every group; momentum of weights
  // and vectors. Empty before bind().
  struct ContextArray {
    void* data = nullptr;
    std::size_t count = 0;  // elements
    nn::DType type = nn::DType::f32;
  };
  ContextArray gradients(ParamGroup group) const;  // weights or vectors
  ContextArray master(ParamGroup group) const;
  ContextArray momentum(ParamGroup group) const;  // weights or vectors
  // Makes the working copy of the weights from the master copy again, after the master copy was
  // overwritten on the context (a broadcast from another replica).
  void refresh_working_copy(nn::Context& ctx);

  // The host copy, in the order of the checkpoint.
  std::vector<float>& host(ParamGroup group) noexcept { return host_[static_cast<int>(group)]; }
  std::vector<float>& host_velocity(ParamGroup group) noexcept { return velocity_[static_cast<int>(group)]; }
  const ParameterLayout& layout() const noexcept { return layout_; }

 private:
  ParameterLayout layout_;
  std::vector<float> host_[3];
  std::vector<float> velocity_[2];  // weights, vectors
  nn::DType dtype_ = nn::DType::f32;
  nn::Buffer master_[3], grad_[2], momentum_[2], working_;
  std::unique_ptr<nn::Sgd> sgd_;  // the context's optimizer, with its settings
};

}  // namespace conveyor::train
