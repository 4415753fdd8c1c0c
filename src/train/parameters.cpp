#include "src/train/parameters.h"

#include <cmath>
#include <numbers>

#include "conveyor/error.h"
#include "conveyor/random.h"

namespace conveyor::train {
namespace {

constexpr int kWeights = 0, kVectors = 1, kStatistics = 2;

void fill(std::vector<float>& values, const ParamEntry& e, Rng& rng) {
  float* p = values.data() + e.ref.offset;
  switch (e.init) {
    case ParamInit::kaiming_normal_fan_out: {
      // He et al.: std = sqrt(2 / fan_out), as torchvision initialises ResNet convolutions.
      const double stddev = std::sqrt(2.0 / e.fan);
      for (std::size_t i = 0; i < e.ref.count; ++i) {
        const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();  // Box-Muller; u1 in (0, 1]
        p[i] =
            static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2));
      }
      break;
    }
    case ParamInit::uniform_fan_in: {
      // PyTorch's nn.Linear default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
      const double bound = 1.0 / std::sqrt(static_cast<double>(e.fan));
      for (std::size_t i = 0; i < e.ref.count; ++i) p[i] = static_cast<float>(rng.uniform(-bound, bound));
      break;
    }
    case ParamInit::ones:
      std::fill(p, p + e.ref.count, 1.f);
      break;
    case ParamInit::zeros:
      std::fill(p, p + e.ref.count, 0.f);
      break;
  }
}

// Host <-> context copies of float arrays.
void to_context(nn::Context& ctx, const nn::Buffer& dst, const std::vector<float>& src) {
  ctx.copy_in(dst.data(), src.data(), src.size() * sizeof(float), "uploading parameters");
}

void from_context(nn::Context& ctx, const nn::Buffer& src, std::vector<float>& dst) {
  ctx.copy_out(dst.data(), src.data(), dst.size() * sizeof(float), "downloading parameters");
}

}  // namespace

ParamRef ParameterLayout::add(std::string name, ParamGroup group, std::size_t count, ParamInit init, int fan,
                              std::vector<std::int64_t> shape, bool krsc) {
  std::size_t& size = sizes_[static_cast<int>(group)];
  const ParamRef ref{group, size, count};
  size += (count + 63) / 64 * 64;  // every tensor starts 256-byte aligned (vector loads, tensor cores)
  if (shape.empty()) shape = {static_cast<std::int64_t>(count)};
  entries_.push_back({std::move(name), ref, init, fan, std::move(shape), krsc});
  return ref;
}

ParameterStore::ParameterStore(const ParameterLayout& layout, std::uint64_t seed) : layout_(layout) {
  for (int g = 0; g < 3; ++g) host_[g].assign(layout.size(static_cast<ParamGroup>(g)), 0.f);
  for (int g = 0; g < 2; ++g) velocity_[g].assign(layout.size(static_cast<ParamGroup>(g)), 0.f);
  for (std::size_t i = 0; i < layout.entries().size(); ++i) {
    const ParamEntry& e = layout.entries()[i];
    Rng rng(seed, i);  // one stream per tensor: adding a layer does not change the others' values
    fill(host_[static_cast<int>(e.ref.group)], e, rng);
  }
}

void ParameterStore::bind(nn::Context& ctx) {
  dtype_ = ctx.dtype();
  const std::size_t n_weights = host_[kWeights].size(), n_vectors = host_[kVectors].size();
  master_[kWeights] = ctx.allocate(n_weights * sizeof(float), "weights (fp32 master copy)");
  master_[kVectors] = ctx.allocate(n_vectors * sizeof(float), "batch-norm scales and biases");
  master_[kStatistics] =
      ctx.allocate(host_[kStatistics].size() * sizeof(float), "batch-norm running statistics");
  grad_[kWeights] = ctx.allocate(n_weights * nn::element_size(dtype_), "weight gradients");
  grad_[kVectors] = ctx.allocate(n_vectors * sizeof(float), "batch-norm and bias gradients");
  momentum_[kWeights] = ctx.allocate(n_weights * sizeof(float), "weight momentum");
  momentum_[kVectors] = ctx.allocate(n_vectors * sizeof(float), "batch-norm and bias momentum");
  // The layers read 16-bit weights: SGD keeps them in step with the float32 master copy.
  if (dtype_ != nn::DType::f32)
    working_ = ctx.allocate(n_weights * nn::element_size(dtype_),
                            std::string("weights (") + to_string(dtype_) + " working copy)");
  sgd_ = ctx.make_sgd();
  upload(ctx);
}

void ParameterStore::unbind() noexcept {
  for (auto& b : master_) b = nn::Buffer();
  for (auto& b : grad_) b = nn::Buffer();
  for (auto& b : momentum_) b = nn::Buffer();
  working_ = nn::Buffer();
  sgd_.reset();
}

void ParameterStore::upload(nn::Context& ctx) {
  for (int g = 0; g < 3; ++g) to_context(ctx, master_[g], host_[g]);
  for (int g = 0; g < 2; ++g) to_context(ctx, momentum_[g], velocity_[g]);
  refresh_working_copy(ctx);
}

ParameterStore::ContextArray ParameterStore::gradients(ParamGroup group) const {
  if (group == ParamGroup::statistics) throw InvalidArgument("parameters: statistics have no gradients");
  const int g = static_cast<int>(group);
  return {grad_[g].data(), host_[g].size(), g == kWeights ? dtype_ : nn::DType::f32};
}

ParameterStore::ContextArray ParameterStore::master(ParamGroup group) const {
  const int g = static_cast<int>(group);
  return {master_[g].data(), host_[g].size(), nn::DType::f32};
}

ParameterStore::ContextArray ParameterStore::momentum(ParamGroup group) const {
  if (group == ParamGroup::statistics) throw InvalidArgument("parameters: statistics have no momentum");
  const int g = static_cast<int>(group);
  return {momentum_[g].data(), velocity_[g].size(), nn::DType::f32};
}

void ParameterStore::refresh_working_copy(nn::Context& ctx) {
  if (working_.data())
    ctx.elementwise().convert_from_float(dtype_, host_[kWeights].size(), master_[kWeights].as<float>(),
                                         working_.data());
}

void ParameterStore::download(nn::Context& ctx) {
  for (int g = 0; g < 3; ++g) from_context(ctx, master_[g], host_[g]);
  for (int g = 0; g < 2; ++g) from_context(ctx, momentum_[g], velocity_[g]);
  ctx.synchronize();
}

void* ParameterStore::weight(const ParamRef& r) const {
  if (working_.data()) return working_.as<std::uint8_t>() + r.offset * nn::element_size(dtype_);
  return master_[kWeights].as<float>() + r.offset;
}
void* ParameterStore::weight_grad(const ParamRef& r) const {
  return grad_[kWeights].as<std::uint8_t>() + r.offset * nn::element_size(dtype_);
}
float* ParameterStore::vector(const ParamRef& r) const { return master_[kVectors].as<float>() + r.offset; }
float* ParameterStore::vector_grad(const ParamRef& r) const { return grad_[kVectors].as<float>() + r.offset; }
float* ParameterStore::statistic(const ParamRef& r) const {
  return master_[kStatistics].as<float>() + r.offset;
}

void ParameterStore::set_hyper(const nn::cpu::SgdHyper& hyper, float loss_scale) {
  if (!sgd_) throw InvalidArgument("parameters: set_hyper() before bind()");
  sgd_->set_hyper(hyper, loss_scale);
}

void ParameterStore::sgd_step() {
  sgd_->update(dtype_, host_[kWeights].size(), grad_[kWeights].data(), master_[kWeights].as<float>(),
               momentum_[kWeights].as<float>(), working_.data(), "weights");
  sgd_->update(nn::DType::f32, host_[kVectors].size(), grad_[kVectors].data(), master_[kVectors].as<float>(),
               momentum_[kVectors].as<float>(), nullptr, "batch-norm and biases");
}

}  // namespace conveyor::train
