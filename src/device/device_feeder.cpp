#include "conveyor/cuda/device_feeder.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <utility>

#include "conveyor/cuda/host_locality.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/ranks.h"
#include "conveyor/error.h"
#include "conveyor/ops/flip.h"
#include "conveyor/random.h"
#include "src/device/cpu_feeder.h"
#include "src/device/lookahead.h"
#ifdef CONVEYOR_HAVE_CUDA
#include "src/device/gpu_feeder.h"
#endif

namespace conveyor {
namespace {

void check_options(const FeederOptions& options) {
  if (options.kernel_blocks_per_image < 0)
    throw InvalidArgument("DeviceFeeder: kernel_blocks_per_image must be >= 0 (0: one pass's worth)");
  if (options.depth < 1 || options.depth > 8)
    throw InvalidArgument("DeviceFeeder depth must be 1 to 8 (2 or 3 are the useful ones), got " +
                          std::to_string(options.depth));
  const DeviceAugment& augment = options.augment;
  if (!augment.empty() && !options.normalize)
    throw InvalidArgument(
        "DeviceFeeder: FeederOptions::augment writes images(), so it needs FeederOptions::normalize (the "
        "model's mean, std, element type and layout)");
  if (augment.flip_horizontal && !(*augment.flip_horizontal >= 0.0 && *augment.flip_horizontal <= 1.0))
    throw InvalidArgument("DeviceFeeder: the flip probability must be in [0, 1]");
  if (augment.distort) {
    const ops::DistortOptions& d = *augment.distort;
    for (const double v : {d.brightness, d.contrast, d.saturation})
      if (!(v >= 0.0 && v <= 1000.0))
        throw InvalidArgument("DeviceFeeder: distort factors must be in [0, 1000]");
    if (!(d.hue >= 0.0 && d.hue <= 0.5))
      throw InvalidArgument("DeviceFeeder: distort hue must be in [0, 0.5]");
  }
  if (options.decode.enabled) {
    if (!(options.decode.share >= 0.0 && options.decode.share <= 1.0))
      throw InvalidArgument("DeviceFeeder: DeviceDecode::share must be in [0, 1]");
    if (options.depth < 2)
      throw InvalidArgument(
          "DeviceFeeder: decoding on the device stages batches ahead: depth must be at least 2");
  }
}

int cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

// `dataset` with `maps` appended to its chain, batched and prefetched as it was.
BatchedDataset with_maps(const BatchedDataset& dataset, const std::vector<SampleOp>& maps) {
  Dataset samples = dataset.samples();
  for (const SampleOp& op : maps) samples = samples.map(op);
  return dataset.with_samples(std::move(samples));
}

// FeederOptions::augment as the SampleOps a CPU placement runs in the pipeline.
std::vector<SampleOp> augment_maps(const DeviceAugment& augment) {
  std::vector<SampleOp> maps;
  if (augment.flip_horizontal) {
    const double p = *augment.flip_horizontal;
    const std::uint64_t stream = augment.flip_stream;
    maps.push_back({"flip_horizontal", [p, stream](Sample& sample) {
                      if (ops::draw_flip(p, sample.seed, stream))
                        ops::flip_horizontal(sample.mutable_image());
                    }});
  }
  if (augment.distort) {
    const ops::DistortOptions options = *augment.distort;
    const std::uint64_t stream = augment.distort_stream;
    maps.push_back({"distort", [options, stream](Sample& sample) {
                      Rng rng(sample.seed, stream);
                      ops::distort(sample.mutable_image(), options, rng);
                    }});
  }
  return maps;
}

// The users' pixel ops as the SampleOps a CPU placement runs in the pipeline, each drawing from the position
// it had in the chain (appended at the chain's end, it would otherwise draw from another stream).
std::vector<SampleOp> pixel_op_maps(const std::vector<PlacedPixelOp>& placed) {
  std::vector<SampleOp> maps;
  for (const PlacedPixelOp& one : placed)
    maps.push_back({one.op.name, [op = one.op, position = one.position](Sample& sample) {
                      const std::uint32_t own = sample.op_position;
                      sample.op_position = static_cast<std::uint32_t>(position);
                      op.apply(sample);
                      sample.op_position = own;
                    }});
  return maps;
}

void check_batch(const Batch& batch) {
  if (!batch) throw InvalidArgument("DeviceFeeder::stage: the batch is empty (moved from or released)");
  if (batch.size() == 0 || batch.sample_shape().empty())
    throw InvalidArgument("DeviceFeeder::stage: the batch has no samples");
}

}  // namespace

DeviceFeeder::DeviceFeeder(const Placement& placement, FeederOptions options)
    : placement_(placement), options_(std::move(options)) {
  check_options(options_);
  if (!placement_.gpu) {
    backend_ = std::make_shared<detail::CpuFeeder>(options_);
    return;
  }
#ifdef CONVEYOR_HAVE_CUDA
  backend_ = std::make_shared<detail::GpuFeeder>(placement_.device, options_, nullptr);
#else
  throw DeviceError("DeviceFeeder: placement on gpu:" + std::to_string(placement_.device) +
                    " but this build of conveyor has no CUDA support");
#endif
}

DeviceFeeder::DeviceFeeder(const Placement& placement, [[maybe_unused]] cuda::DeviceMemoryPool& pool,
                           FeederOptions options)
    : placement_(placement), options_(std::move(options)) {
  check_options(options_);
  if (!placement_.gpu)
    throw InvalidArgument("DeviceFeeder: a device memory pool was given for a CPU placement");
#ifdef CONVEYOR_HAVE_CUDA
  backend_ = std::make_shared<detail::GpuFeeder>(placement_.device, options_, &pool);
#else
  throw DeviceError("DeviceFeeder: this build of conveyor has no CUDA support");
#endif
}

DeviceFeeder::~DeviceFeeder() {
  // Held batches keep the backend (and their ring memory) alive; the copies in flight end here.
  try {
    backend_->synchronize();
  } catch (...) {
    // A destructor cannot report; a failed copy (or a context that could not be made) was reported, or
    // will be, by stage() or synchronize().
  }
}

DeviceBatch DeviceFeeder::stage(Batch batch) {
  check_batch(batch);
  return backend_->stage(std::move(batch), {});
}

BatchedDataset DeviceFeeder::fed(const BatchedDataset& dataset) const {
  // The feeder holds up to `depth` host batches while their copies run; the pipeline keeps room for them.
  return dataset.with_options(
      {.held_batches = std::max(dataset.options().held_batches, static_cast<std::size_t>(options_.depth)),
       .host_memory = backend_->host_memory()});
}

DeviceBatchIterator DeviceFeeder::feed(const BatchedDataset& dataset) { return start(dataset, nullptr); }

DeviceBatchIterator DeviceFeeder::feed(const BatchedDataset& dataset, const IteratorState& state) {
  return start(dataset, &state);
}

DeviceBatchIterator DeviceFeeder::start(const BatchedDataset& dataset, const IteratorState* state) {
  PipelineOptions options = fed(dataset).options();
  BatchedDataset chain = dataset;
  // The same chain and options continue from `state` as an uninterrupted run would have run them.
  auto begin = [&] {
    const BatchedDataset configured = chain.with_options(PipelineOptionChanges::all(options));
    return state ? configured.begin(*state) : configured.begin();
  };
  if (!placement_.gpu) {
    // The training step runs on this machine's cores too: leave it one, unless told otherwise.
    if (options.threads == 0) options.threads = std::max(1, cores() - 1);
    // The device's per-pixel ops run as the pipeline's last maps (pixel twins' ops first, as the feeder runs
    // them): the same draws, the same bytes.
    if (!options_.augment.empty() || !options_.pixel_ops.empty()) {
      std::vector<SampleOp> maps = pixel_op_maps(options_.pixel_ops);
      for (SampleOp& op : augment_maps(options_.augment)) maps.push_back(std::move(op));
      chain = with_maps(dataset, maps);
    }
    DeviceBatchIterator iterator(*this, begin(), nullptr);
    iterator.augmented_ = !options_.augment.empty() || !options_.pixel_ops.empty();
    return iterator;
  }
#ifdef CONVEYOR_HAVE_CUDA
  auto& gpu = static_cast<detail::GpuFeeder&>(*backend_);
  if (options.cpus.empty() && options_.host.cpus_near_gpu) {
    // One process of several on this host: its pipeline on its share of the CPUs next to its GPU.
    const Ranks ranks = options_.host.ranks ? *options_.host.ranks : ranks_from_environment();
    if (ranks.local_world_size > 1) {
      HostCpus mine = cpus_near_gpu(ranks, placement_.device);
      options.cpus = mine.cpus;
      gpu.note_pipeline_cpus(std::move(mine.cpus), std::move(mine.reason));
    } else {
      gpu.note_pipeline_cpus({}, "the only process on this host: wherever it may run");
    }
  } else {
    gpu.note_pipeline_cpus(options.cpus, options.cpus.empty() ? "wherever the process may run (HostPlacement "
                                                                "off)"
                                                              : "the dataset's PipelineOptions::cpus");
  }
  const int threads = options.threads > 0                 ? options.threads
                      : !options.cpus.empty()             ? static_cast<int>(options.cpus.size())
                                                          : cores();
  if (const std::optional<ImageShape> shape = dataset.sample_shape(); shape && dataset.batch_size() > 0)
    gpu.expect_batches(dataset.batch_size(), *shape);
  options.defer = gpu.start_decoding(dataset, options, threads);
  if (options.defer) {
    const auto ahead = static_cast<std::size_t>(std::max(1, options_.depth - 1));
    detail::Lookahead::Thread thread{options_.progress_watch,
                                     "feeder gpu:" + std::to_string(placement_.device) + " staging thread",
                                     options.cpus};
    return DeviceBatchIterator(
        *this, std::nullopt,
        std::make_unique<detail::Lookahead>(backend_, begin(), ahead, std::move(thread)));
  }
#endif
  return DeviceBatchIterator(*this, begin(), nullptr);
}

double DeviceFeeder::warmup(const BatchedDataset& dataset) { return backend_->warmup(fed(dataset)); }

void DeviceFeeder::synchronize() { backend_->synchronize(); }

FeederStats DeviceFeeder::stats() const { return backend_->stats(); }

const Placement& DeviceFeeder::placement() const noexcept { return placement_; }

const FeederOptions& DeviceFeeder::options() const noexcept { return options_; }

// ---- DeviceBatchIterator -----------------------------------------------------------------------

DeviceBatchIterator::DeviceBatchIterator(DeviceFeeder& feeder, std::optional<BatchIterator> batches,
                                         std::unique_ptr<detail::Lookahead> lookahead)
    : feeder_(&feeder), batches_(std::move(batches)), lookahead_(std::move(lookahead)) {}

DeviceBatchIterator::DeviceBatchIterator(DeviceBatchIterator&&) noexcept = default;
DeviceBatchIterator& DeviceBatchIterator::operator=(DeviceBatchIterator&&) noexcept = default;

DeviceBatchIterator::~DeviceBatchIterator() {
  current_.reset();
  lookahead_.reset();  // stops the staging thread before the pipeline it reads goes
}

PipelineStats DeviceBatchIterator::stats() const {
  if (lookahead_) return lookahead_->stats();
  return batches_ ? batches_->stats() : PipelineStats{};
}

IteratorState DeviceBatchIterator::state() const {
  if (lookahead_) return lookahead_->state();
  if (!batches_) throw InvalidArgument("DeviceBatchIterator::state: the iterator was moved from");
  return batches_->state();
}

std::optional<DeviceBatch> DeviceBatchIterator::next() {
  if (fetched_) {
    fetched_ = false;
    return std::exchange(current_, std::nullopt);
  }
  if (lookahead_) return lookahead_->next();
  if (!batches_) return std::nullopt;
  std::optional<Batch> batch = batches_->next();
  if (!batch) return std::nullopt;
  check_batch(*batch);
  return detail::DeviceBatchAccess::backend(*feeder_).stage(std::move(*batch), {.augmented = augmented_});
}

bool DeviceBatchIterator::at_end() {
  if (!fetched_) {
    current_.reset();  // the previous item is released before the next is staged
    current_ = next();
    fetched_ = true;
  }
  return !current_.has_value();
}

DeviceBatch& DeviceBatchIterator::current() {
  if (at_end()) throw InvalidArgument("DeviceBatchIterator: dereferenced at the end");
  return *current_;
}

void DeviceBatchIterator::advance() {
  if (!fetched_) at_end();  // skip the item that was never looked at
  fetched_ = false;
  current_.reset();
}

}  // namespace conveyor
