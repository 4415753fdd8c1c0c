#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "src/train/checkpoint.h"
#include "src/train/input_images.h"
#include "src/train/layers/algorithm_cache.h"
#include "src/train/trainer_impl.h"

namespace conveyor::train {
namespace {

using Clock = std::chrono::steady_clock;

nn::DType dtype_of(Precision p) {
  return p == Precision::bf16 ? nn::DType::bf16 : p == Precision::fp16 ? nn::DType::f16 : nn::DType::f32;
}

NetworkShape shape_of(const TrainerOptions& o) {
  NetworkShape s;
  s.batch = o.batch;
  s.input = o.input;
  s.classes = o.num_classes;
  s.batch_norm.fused = o.fused_batch_norm;
  s.batch_norm.momentum = o.bn_momentum;
  s.batch_norm.epsilon = o.bn_epsilon;
  return s;
}

// The network to train: the user's description, or the built-in one `model` names.
NetworkDescription description_of(const TrainerOptions& o) {
  if (!o.network.empty()) return o.network;
  if (o.model == ModelKind::resnet18) return resnet18(o.num_classes);
  if (o.width < 1 || o.blocks_per_stage < 1)
    throw InvalidArgument("trainer: small_resnet needs a positive width and blocks per stage");
  return small_resnet(o.width, o.blocks_per_stage, o.num_classes);
}

double elapsed_ms(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

}  // namespace

Trainer::Impl::Impl(TrainerOptions o)
    : options(o),
      description(description_of(o)),
      network(description, shape_of(o), layout),
      params(layout, o.seed) {
  if (o.input.channels < 1 || o.input.channels > 3)
    throw InvalidArgument("trainer: input images must have 1 to 3 channels");
}

ops::NormalizeParams Trainer::Impl::normalize_params() const {
  ops::NormalizeParams p;
  for (int c = 0; c < 3; ++c) p.mean[c] = options.mean[c], p.std[c] = options.std[c];
  // The GPU context computes in the asked precision, the CPU reference in fp32 (as warmup() makes them).
  const Precision precision = options.device >= 0 ? options.precision : Precision::fp32;
  p.type = precision == Precision::bf16   ? ops::ElementType::bfloat16
           : precision == Precision::fp16 ? ops::ElementType::float16
                                          : ops::ElementType::float32;
  p.layout = ops::TensorLayout::hwc;  // the model is NHWC throughout
  return p;
}

nn::cpu::SgdHyper Trainer::Impl::hyper() const {
  return {options.learning_rate, options.momentum, options.weight_decay, options.nesterov};
}

void Trainer::Impl::warmup() {
  if (ctx) return;
  const auto start = Clock::now();
  WarmupReport report;
  Backend backend = make_backend({.device = options.device,
                                  .dtype = dtype_of(options.precision),
                                  .memory_limit_bytes = options.memory_limit_bytes,
                                  .memory_fraction = options.memory_fraction,
                                  .deterministic = options.deterministic,
                                  .urgent_stream = options.urgent_stream});
  DeviceScope scope(options.device);
  ctx = std::move(backend.context);
  step_backend = std::move(backend.steps);
  // fp16 gradients would underflow: the loss is scaled by a constant and SGD divides it out again.
  loss_scale = ctx->dtype() == nn::DType::f16 ? 1024.f : 1.f;
  report.context_seconds = elapsed_ms(start) / 1000.0;
  warmup_report = report;
  try {
    auto phase = Clock::now();
    open_algorithm_cache();
    params.bind(*ctx);
    params.set_hyper(hyper(), loss_scale);
    network.prepare(*ctx, params);
    step_backend->prepare(options.input, options.batch);
    if (nn::AlgorithmCache* cache = ctx->algorithm_cache()) cache->save();
    if (hooks.prepared) hooks.prepared();  // the data-parallel trainer's buckets, before any step runs
    ctx->synchronize();
    warmup_report.prepare_seconds = elapsed_ms(phase) / 1000.0;
    warmup_report.classifier_seconds = network.classifier_warmup_seconds();
    // A throwaway step (and where first calls cost, an evaluation) on the zeroed input with label 0 pays
    // every first-call cost (cuDNN and cuBLAS kernel loading, lazy module loading) before anything is
    // captured; then the parameters go back to their initial values.
    phase = Clock::now();
    run_step_body();
    if (ctx->has_first_call_costs()) run_evaluation_body();
    params.upload(*ctx);
    ctx->synchronize();
    warmup_report.first_step_seconds = elapsed_ms(phase) / 1000.0;
    phase = Clock::now();
    if (options.cuda_graph && step_backend->records_graphs()) capture_graphs();
    ctx->synchronize();
    warmup_report.capture_seconds = elapsed_ms(phase) / 1000.0;
  } catch (...) {
    report_algorithm_cache();
    release();  // a later warmup() starts again from scratch
    throw;
  }
  report_algorithm_cache();
  warmup_report.seconds = elapsed_ms(start) / 1000.0;
}

void Trainer::Impl::open_algorithm_cache() {
  if (!options.algorithm_cache || options.deterministic) return;
  const std::optional<std::filesystem::path> folder =
      nn::algorithm_cache_folder(options.algorithm_cache_dir, std::getenv("CONVEYOR_ALGORITHM_CACHE"),
                                 std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
  if (folder) ctx->use_algorithm_cache(*folder);
}

void Trainer::Impl::report_algorithm_cache() {
  const nn::AlgorithmCache* cache = ctx ? ctx->algorithm_cache() : nullptr;
  if (!cache) return;
  WarmupReport::AlgorithmCache& r = warmup_report.algorithm_cache;
  const nn::AlgorithmCacheCounts& c = cache->counts();
  r.file = cache->file().string();
  r.loaded = c.loaded, r.reused = c.reused, r.searched = c.searched, r.rejected = c.rejected;
  r.warnings = c.warnings;
  r.messages = cache->messages();
}

void Trainer::Impl::capture_graphs() {
  try {
    step_backend->record_graphs([this] { run_step_body(); }, [this] { run_evaluation_body(); });
    warmup_report.graph = true;
  } catch (const Error& e) {
    // Eager launches do the same work: the trainer goes on without graphs and says why.
    warmup_report.graph = false;
    warmup_report.graph_fallback = e.what();
  }
}

void Trainer::Impl::release() noexcept {
  network.release();
  params.unbind();
  step_backend.reset();
  ctx.reset();
}

void Trainer::Impl::run_step_body() {
  network.forward(params, true);
  network.loss(options.batch, loss_scale, true, static_cast<float>(options.label_smoothing));
  if (hooks.before_backward) hooks.before_backward();
  network.backward(params, hooks.gradient_ready);
  if (hooks.before_update) hooks.before_update();
  params.sgd_step();
}

void Trainer::Impl::run_evaluation_body() { network.forward_evaluation(params, options.evaluate_flipped); }

void Trainer::Impl::check_batch(const DeviceBatch& batch, std::size_t min_size) const {
  if (!batch) throw InvalidArgument("trainer: the batch is empty (released or moved from)");
  const ImageShape shape = batch.sample_shape();
  if (shape != options.input)
    throw InvalidArgument("trainer: batch images are " + std::to_string(shape.height) + "x" +
                          std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                          ", the model takes " + std::to_string(options.input.height) + "x" +
                          std::to_string(options.input.width) + "x" + std::to_string(options.input.channels));
  if (batch.size() < min_size || batch.size() > static_cast<std::size_t>(options.batch))
    throw InvalidArgument("trainer: a batch of " + std::to_string(batch.size()) +
                          " images; this call takes " + (min_size == batch.size() ? "" : "1 to ") +
                          std::to_string(options.batch));
  if (batch.on_device() && batch.device() != options.device)
    throw InvalidArgument("trainer: batch is on device " + std::to_string(batch.device()) +
                          ", the trainer on " + std::to_string(options.device));
}

void Trainer::Impl::stage(const DeviceBatch& batch, std::size_t count) {
  const ops::NormalizeParams p = normalize_params();
  // The feeder made the model's input already (FeederOptions::normalize = input_normalization()).
  const bool ready = takes_images(batch, p, options.input.channels);
  step_backend->stage(batch, count, p, ready, network.input(), network.labels());
}

void Trainer::Impl::step(const DeviceBatch& batch) {
  check_batch(batch, static_cast<std::size_t>(options.batch));
  step_backend->begin_step(batch, step_ms);
  stage(batch, batch.size());
  if (!step_backend->replay_step()) run_step_body();
  step_backend->end_step(step_ms);
  ++steps;
}

void Trainer::Impl::set_learning_rate(double learning_rate) {
  options.learning_rate = learning_rate;
  if (ctx) params.set_hyper(hyper(), loss_scale);
}

StepStats Trainer::Impl::last_step() {
  if (steps == 0) return {};
  const auto count = static_cast<std::size_t>(options.batch);
  const auto [loss, correct] = step_backend->rows_on_host(network.row_loss(), network.row_correct(), count);
  double loss_sum = 0;
  std::size_t right = 0;
  for (std::size_t i = 0; i < count; ++i) {
    if (correct[i] < 0)
      throw InvalidArgument("trainer: the label of image " + std::to_string(i) +
                            " of the batch is outside [0, " + std::to_string(options.num_classes) + ")");
    loss_sum += loss[i];
    right += static_cast<std::size_t>(correct[i]);
  }
  const auto n = static_cast<double>(options.batch);
  return {loss_sum / n, static_cast<double>(right) / n, count};
}

void Trainer::Impl::add_to_evaluation(const DeviceBatch& batch) {
  check_batch(batch, 1);
  const std::size_t count = batch.size();
  // Rows past count keep whatever the buffers held: inference is per image, and only the first count
  // rows are counted. The graph was recorded for full batches; a short one runs the same work eagerly.
  stage(batch, count);
  if (count != static_cast<std::size_t>(options.batch) || !step_backend->replay_evaluation())
    run_evaluation_body();
  network.loss(static_cast<int>(count), 1.f, false);
  step_backend->add_rows(static_cast<int>(count), network.row_loss(), network.row_correct());
}

EvalResult Trainer::Impl::take_evaluation() {
  if (!ctx) return {};
  const EvaluationSums sums = step_backend->take_sums();
  check_labels(sums.bad_labels, sums.rows);
  return {sums.correct, sums.loss, sums.rows};
}

void Trainer::Impl::check_labels(std::size_t bad, std::size_t rows) const {
  if (bad)
    throw InvalidArgument("trainer: " + std::to_string(bad) + " of the " + std::to_string(rows) +
                          " images evaluated had a label outside [0, " + std::to_string(options.num_classes) +
                          ")");
}

void Trainer::Impl::collect_times() {
  if (step_backend) step_backend->collect_times(step_ms);
}

std::string Trainer::Impl::placement() const {
  if (!ctx) {
    if (options.device < 0) return "CPU reference (not warmed up yet)";
    return "cuDNN on GPU " + std::to_string(options.device) + ", " + to_string(options.precision) +
           " NHWC (not warmed up yet)";
  }
  std::string text = ctx->describe();
  if (ctx->dtype() == nn::DType::f32 && options.precision != Precision::fp32)
    text += std::string(" (") + to_string(options.precision) + " asked; the CPU reference computes in fp32)";
  text += ", batch norm: " + network.batch_norm_paths();
  if (warmup_report.graph)
    text += ", step and evaluation replayed as CUDA graphs";
  else if (step_backend->records_graphs())
    text += warmup_report.graph_fallback.empty() ? ", eager launches (CUDA graphs off)"
                                                 : ", eager launches (CUDA graph capture failed)";
  return text;
}

// ---- the public class ----------------------------------------------------------------------------
// Every call that may touch the GPU makes the trainer's device current for its duration (only once the
// trainer is warmed up: before, there is nothing on a device, and warmup() validates the device first).

Trainer::Trainer(TrainerOptions options) : impl_(std::make_unique<Impl>(options)) {}
Trainer::~Trainer() {
  if (impl_) {
    DeviceScope scope(impl_->device_in_use());
    impl_.reset();
  }
}

void Trainer::warmup() { impl_->warmup(); }
ops::NormalizeParams Trainer::input_normalization() const { return impl_->normalize_params(); }
double Trainer::warmup_seconds() const noexcept { return impl_->warmup_report.seconds; }
const WarmupReport& Trainer::warmup_report() const noexcept { return impl_->warmup_report; }

void Trainer::step(const DeviceBatch& batch) {
  impl_->warmup();
  DeviceScope scope(impl_->device_in_use());
  impl_->step(batch);
}

void Trainer::set_learning_rate(double learning_rate) {
  DeviceScope scope(impl_->device_in_use());
  impl_->set_learning_rate(learning_rate);
}

StepStats Trainer::last_step() {
  DeviceScope scope(impl_->device_in_use());
  return impl_->last_step();
}

void Trainer::add_to_evaluation(const DeviceBatch& batch) {
  impl_->warmup();
  DeviceScope scope(impl_->device_in_use());
  impl_->add_to_evaluation(batch);
}

EvalResult Trainer::take_evaluation() {
  DeviceScope scope(impl_->device_in_use());
  return impl_->take_evaluation();
}

EvalResult Trainer::evaluate(const DeviceBatch& batch) {
  add_to_evaluation(batch);
  return take_evaluation();
}

void Trainer::synchronize() {
  DeviceScope scope(impl_->device_in_use());
  if (impl_->ctx) impl_->ctx->synchronize();
}

double Trainer::gpu_busy_ms() {
  DeviceScope scope(impl_->device_in_use());
  impl_->collect_times();
  double total = 0;
  for (double ms : impl_->step_ms) total += ms;
  return total;
}

std::vector<double> Trainer::step_times_ms() {
  DeviceScope scope(impl_->device_in_use());
  impl_->collect_times();
  return impl_->step_ms;
}

std::size_t Trainer::steps() const noexcept { return impl_->steps; }

void Trainer::save_checkpoint(const std::filesystem::path& file, const TrainingProgress& progress) const {
  DeviceScope scope(impl_->device_in_use());
  if (impl_->ctx) impl_->params.download(*impl_->ctx);
  train::save_checkpoint(file, impl_->options, impl_->params, progress);
}

TrainingProgress Trainer::load_checkpoint(const std::filesystem::path& file) {
  DeviceScope scope(impl_->device_in_use());
  TrainingProgress progress = train::load_checkpoint(file, impl_->options, impl_->params);
  impl_->set_learning_rate(progress.learning_rate);
  if (impl_->ctx) impl_->params.upload(*impl_->ctx);
  return progress;
}

std::string Trainer::placement() const { return impl_->placement(); }
std::string Trainer::describe_layers() const { return impl_->network.describe(); }
const TrainerOptions& Trainer::options() const noexcept { return impl_->options; }
const NetworkDescription& Trainer::network() const noexcept { return impl_->description; }

std::vector<ParameterInfo> Trainer::parameters() const {
  std::vector<ParameterInfo> list;
  for (const ParamEntry& e : impl_->layout.entries())
    list.push_back({e.name, e.shape, e.ref.group != ParamGroup::statistics});
  return list;
}

}  // namespace conveyor::train
