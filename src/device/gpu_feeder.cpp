#include "src/device/gpu_feeder.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "conveyor/cuda/host_locality.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/error.h"
#include "conveyor/progress_watch.h"
#include "src/core/phase_timeline.h"
#include "src/core/seconds_since.h"
#include "src/core/user_cache_folder.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/cpu_fallback.h"
#include "src/device/decode/decoded_runs.h"
#include "src/device/device_bound_memory.h"
#include "src/device/node_pinned_memory.h"
#include "src/device/normalize.h"
#include "src/device/normalized_images.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "src/memory/batch_pool.h"

namespace conveyor::detail {
namespace {

constexpr const char* kFeederContext = "DeviceFeeder";
constexpr std::size_t kAlignment = 256;  // labels and images start on their own DMA-friendly boundary

std::size_t round_up(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The augmentation's draws, from the feeder's options.
cuda::GpuAugmentOptions augment_options(const FeederOptions& options) {
  cuda::GpuAugmentOptions augment;
  if (options.augment.flip_horizontal)
    augment.draws.flip = cuda::FlipDraw{*options.augment.flip_horizontal, options.augment.flip_stream};
  if (options.augment.distort)
    augment.draws.distort = cuda::DistortDraw{*options.augment.distort, options.augment.distort_stream};
  augment.normalize = *options.normalize;  // the feeder checked that it is set
  augment.depth = options.depth;
  augment.blocks_per_image = options.kernel_blocks_per_image;
  return augment;
}

// Page-locked memory is what the copy engine can read directly; ask CUDA rather than trust a flag.
bool is_page_locked(const void* host) {
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, host);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeHost;
}

// The page-locked memory of the pipelines' batches: bound to the GPU's NUMA node on a host of several
// (HostPlacement::memory_near_gpu), else cudaHostAlloc's. `where` says which and why.
std::shared_ptr<HostMemoryResource> batch_memory(int device, const HostPlacement& host, std::string& where) {
  where = "page-locked by cudaHostAlloc";
  if (!host.memory_near_gpu) return pinned_host_memory();
  const int nodes = cuda::host_numa_nodes();
  if (nodes < 2) {
    where += nodes == 0 ? " (libnuma: NUMA is not available to this process)" : " (one NUMA node on this host)";
    return pinned_host_memory();
  }
  const GpuLocality locality = gpu_locality(device);
  if (locality.numa_node < 0) {
    where += " (the GPU's NUMA node is unknown: " + locality.unknown + ")";
    return pinned_host_memory();
  }
  std::string why;
  if (std::shared_ptr<HostMemoryResource> bound = cuda::node_pinned_memory(locality.numa_node, why)) {
    where = "bound to NUMA node " + std::to_string(locality.numa_node) + " of " + std::to_string(nodes) +
            ", the GPU's (" + locality.pci_bus_id + "), page-locked by cudaHostRegister";
    return bound;
  }
  where += " (" + why + ")";
  return pinned_host_memory();
}

}  // namespace

GpuFeeder::GpuFeeder(int device, const FeederOptions& options, cuda::DeviceMemoryPool* shared_pool)
    : device_(device),
      options_(options),
      pool_(shared_pool),
      early_memory_(std::make_shared<cuda::LateLockedHostMemory>(device)),
      host_memory_(std::make_shared<cuda::PinnedBlockCache>(early_memory_, options.host_blocks_ahead)),
      held_(static_cast<std::size_t>(options.depth)) {
  if (pool_ != nullptr && pool_->device() != device_)
    throw InvalidArgument("DeviceFeeder on gpu:" + std::to_string(device_) +
                          " was given the memory pool of gpu:" + std::to_string(pool_->device()));
  // Nothing made ahead beside the first batch's way to the GPU (resumed once it is staged).
  host_memory_->pause_making_ahead();
  stats_.decoder = "not asked for (FeederOptions::decode)";
  stats_.host_memory = "not known yet: the feeder's CUDA context is being made";
  set_up_ = std::thread([this] { set_up(); });
  if (options_.set_up_behind) return;
  try {
    await_device();  // the way before issue 41's start at once: everything made before this returns
  } catch (...) {
    // Both threads must be joined before the members go: the set-up has ended, and a set-up that failed
    // late may have started the returner.
    set_up_.join();
    stop_returner();
    throw;
  }
}

void GpuFeeder::set_up() noexcept {
  std::exception_ptr failure;
  std::string where;
  PhaseTimeline timeline;  // where the set-up's time went (FeederStats::device_setup)
  try {
    // The CUDA context is made here (cudaSetDevice's first call), and everything below belongs to it.
    cuda::DeviceGuard guard(device_);
    CONVEYOR_CUDA(cudaFree(nullptr), "DeviceFeeder: making the CUDA context");
    timeline.done("context");
    // The slots' events belong to the device current when they are made.
    std::vector<Slot> slots(held_.size());
    if (pool_ == nullptr) {
      own_pool_ = std::make_unique<cuda::DeviceMemoryPool>(device_);
      pool_ = own_pool_.get();
    }
    copy_.emplace();
    own_consumer_.emplace();
    consumer_ = own_consumer_->get();
    timeline.done("streams");
    std::string locked_where;
    // Any pipeline thread may grow the blocks: each is made and freed with the feeder's GPU current (before
    // the context exists, LateLockedHostMemory hands out ordinary memory and calls no CUDA at all).
    std::shared_ptr<HostMemoryResource> locked =
        cuda::with_device(batch_memory(device_, options_.host, locked_where), device_);
    where = locked_where + early_memory_->context_ready(std::move(locked));
    timeline.done("early blocks locked");
    for (Slot& slot : slots) slot.fallback.emplace(cuda::with_device(pinned_host_memory(), device_));
    if (!options_.augment.empty()) augmenter_.emplace(device_, *pool_, augment_options(options_));
    // The users' pixel twins, made for this device (with it current: their streams and buffers belong here).
    for (const PlacedPixelOp& placed : options_.pixel_ops) pixel_ops_.push_back(placed.make(device_));
    slots_ = std::move(slots);
    returner_ = std::thread([this] {
      // Without this, the thread's first CUDA call would bind (and create, on a multi-GPU machine, a
      // stray context on) device 0. A failure here shows up as a failed event wait below.
      cudaSetDevice(device_);
      std::optional<ProgressWatch::Member> member;
      try {
        member.emplace(options_.progress_watch, "feeder gpu:" + std::to_string(device_) + " copy returner");
      } catch (...) {
        // Not watched: a report will miss this thread's line.
      }
      return_batches();
    });
    timeline.done("augmenter and returner");
    prepare_ring();  // what feed() said its batches will be, if it said it already
    timeline.done("ring and kernels");
  } catch (...) {
    failure = std::current_exception();
  }
  settle_device(failure, [&] {
    stats_.device_setup_seconds = timeline.seconds();
    stats_.device_setup = timeline.line();
    if (!failure) stats_.host_memory = where;
  });
}

void GpuFeeder::settle_device(std::exception_ptr failure, const std::function<void()>& record_locked) {
  {
    std::lock_guard lock(mutex_);
    device_failure_ = failure;
    device_settled_ = true;
    record_locked();
  }
  device_ready_.store(!failure, std::memory_order_release);
  device_came_.notify_all();
}

void GpuFeeder::await_device() const {
  if (device_ready_.load(std::memory_order_acquire)) return;
  std::unique_lock lock(mutex_);
  if (!device_settled_) {
    const ProgressWatch::Doing doing("waiting for the feeder's CUDA context (made on a thread of its own)");
    device_came_.wait(lock, [&] { return device_settled_; });
  }
  if (device_failure_) std::rethrow_exception(device_failure_);
}

void GpuFeeder::expect_batches(std::size_t capacity, ImageShape shape) {
  {
    // Read by the set-up thread once the context is there.
    std::lock_guard lock(mutex_);
    expected_ = ExpectedBatches{capacity, shape};
    if (!device_settled_ || device_failure_ || stats_.batches > 0) return;
  }
  // The set-up ended before feed() said what its batches will be: the context was there already, as in a
  // training program whose model made it. The ring and the kernels' loading then come behind the first
  // batch's CPU decoding all the same, on a thread of their own that stage() waits for as it waits for the
  // set-up, instead of inside the first stage() (0.08 s of it on an H200).
  set_up_.join();
  {
    std::lock_guard lock(mutex_);
    device_settled_ = false;
  }
  device_ready_.store(false, std::memory_order_release);
  set_up_ = std::thread([this] { prepare_ring_behind(); });
}

void GpuFeeder::prepare_ring_behind() noexcept {
  std::exception_ptr failure;
  PhaseTimeline timeline;
  try {
    cuda::DeviceGuard guard(device_);
    prepare_ring();
    timeline.done("ring and kernels");
  } catch (...) {
    failure = std::current_exception();
  }
  settle_device(failure, [&] { stats_.device_setup += "; at feed(), " + timeline.line(); });
}

void GpuFeeder::prepare_ring() {
  std::optional<ExpectedBatches> expected;
  {
    std::lock_guard lock(mutex_);
    expected = expected_;
  }
  if (!expected) return;
  // Off the first batch's way: the ring's device buffers and the kernels' loading, while the CPU workers
  // decode that batch.
  for (std::size_t i = 0; i < slots_.size(); ++i)
    ensure_capacity(slots_[i], i, expected->capacity, expected->shape);
  launch_kernels_once(expected->capacity, expected->shape);
}

void GpuFeeder::launch_kernels_once(std::size_t capacity, ImageShape shape) {
  if (!options_.normalize) return;
  // CUDA loads a kernel at its first launch (lazy loading): launched here, on whatever the first slot holds,
  // its images are overwritten by the first batch's, which the copy stream orders after this.
  Slot& first = slots_.front();
  auto* pixels = first.buffer.as<std::uint8_t>();
  void* images = pixels + first.images_offset;
  seeds_.assign(capacity, 0);
  if (augmenter_)
    augmenter_->run({pixels, capacity, shape, shape.bytes()}, seeds_, images, copy_->get());
  else
    ops::normalize_batch_cuda(pixels, capacity, shape, *options_.normalize, images, copy_->get());
}

GpuFeeder::~GpuFeeder() {
  // The set-up thread first: the context cannot be abandoned half made, and everything below is its work.
  set_up_.join();
  // A decoder startup goes next (stopped and joined): it works on the members below.
  std::unique_ptr<cuda::DecoderStartup> startup;
  {
    std::lock_guard lock(mutex_);
    startup_plan_.reset();
    startup = std::move(startup_);
  }
  startup.reset();
  stop_returner();
  // A set-up that failed left nothing to order: what it made goes with the members, in their order.
  if (!device_ready_.load(std::memory_order_acquire)) return;
  remember_split();
  try {
    cuda::DeviceGuard guard(device_);
    // No batch is held any more (each hold keeps this object alive), but the last consumers may still
    // read: free each buffer in stream order after its release point.
    for (Slot& slot : slots_) {
      cudaStreamWaitEvent(copy_->get(), slot.released.get(), 0);
      slot.buffer.reset();
      slot.fields.reset();
    }
    cudaStreamSynchronize(copy_->get());
  } catch (const Error&) {
    // A destructor cannot report; the CUDA context is broken if the guard failed.
  }
}

void GpuFeeder::stop_returner() noexcept {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  // It drains the queue first: every copy has finished and every batch is back. A set-up that failed may
  // have failed before starting it.
  if (returner_.joinable()) returner_.join();
}

void GpuFeeder::rethrow_failure_locked() const {
  if (failure_) std::rethrow_exception(failure_);
}

void GpuFeeder::note_pipeline_cpus(std::vector<int> cpus, std::string reason) {
  std::lock_guard lock(mutex_);
  stats_.pipeline_cpus = std::move(cpus);
  stats_.pipeline_cpus_reason = std::move(reason);
}

cudaStream_t GpuFeeder::consumer_stream() const {
  await_device();
  return consumer_;
}

void GpuFeeder::set_consumer_stream(cudaStream_t stream) {
  await_device();
  if (held_.held() > 0)
    throw Error("DeviceFeeder: the consumer stream can change only while no batch is held (" +
                std::to_string(held_.held()) + " held now)");
  consumer_ = stream != nullptr ? stream : own_consumer_->get();
}

void GpuFeeder::read_on(std::size_t index, cudaStream_t stream) {
  await_device();
  cuda::DeviceGuard guard(device_);
  Slot& slot = slots_[index];
  CONVEYOR_CUDA(cudaStreamWaitEvent(stream, slot.ready.get(), 0),
                "DeviceFeeder (a batch read on another stream)");
  std::lock_guard lock(mutex_);
  if (stream != slot.consumer &&
      std::find(slot.readers.begin(), slot.readers.end(), stream) == slot.readers.end())
    slot.readers.push_back(stream);
}

cudaStream_t GpuFeeder::consumer_of(std::size_t index) const { return slots_[index].consumer; }

void GpuFeeder::ensure_capacity(Slot& slot, std::size_t index, std::size_t capacity, ImageShape shape) {
  const std::size_t pixel_bytes = capacity * shape.bytes();
  const std::size_t label_bytes = capacity * sizeof(std::int64_t);
  const std::size_t image_bytes =
      options_.normalize ? capacity * shape.bytes() * ops::element_size(options_.normalize->type) : 0;
  const std::size_t label_offset = round_up(pixel_bytes);
  const std::size_t images_offset = round_up(label_offset + label_bytes);
  if (slot.buffer && slot.pixel_capacity >= pixel_bytes && slot.label_offset == label_offset &&
      slot.buffer.bytes() >= images_offset + image_bytes)
    return;
  // The copy stream already waits for the slot's release point, so freeing here (stream-ordered) cannot
  // pull the memory from under a consumer that still reads it.
  slot.buffer.reset();
  slot.pixel_capacity = 0;
  const std::string what = "DeviceFeeder ring slot " + std::to_string(index) + " (" +
                           std::to_string(capacity) + " x " + std::to_string(shape.height) + "x" +
                           std::to_string(shape.width) + "x" + std::to_string(shape.channels) +
                           " uint8 pixels + int64 labels" + (image_bytes ? " + normalized images" : "") + ")";
  slot.buffer = pool_->allocate(images_offset + image_bytes, copy_->get(), what);
  slot.pixel_capacity = pixel_bytes;
  slot.label_offset = label_offset;
  slot.images_offset = images_offset;
  std::lock_guard lock(mutex_);
  ++stats_.allocations;
}

double GpuFeeder::warmup(const BatchedDataset& dataset) {
  const auto start = std::chrono::steady_clock::now();
  const std::optional<ImageShape> shape = dataset.sample_shape();
  const std::size_t capacity = dataset.batch_size();
  if (!shape || capacity == 0) return 0;  // the shape comes from the first element: nothing to size yet
  await_device();
  cuda::DeviceGuard guard(device_);
  const cudaStream_t stream = copy_->get();
  // The ring and its kernels only while no batch is held: a held slot's buffer is not ours to resize, and
  // the kernels below write into the first slot.
  const bool idle = held_.held() == 0;
  if (idle)
    for (std::size_t i = 0; i < slots_.size(); ++i) ensure_capacity(slots_[i], i, capacity, *shape);
  // The pipeline's batch buffers: as many as it keeps ready, holds for the feeder and has in the making.
  const std::size_t in_making = 2;
  host_memory_->reserve(BatchPool::buffer_bytes(capacity, *shape),
                        dataset.prefetch_depth() + dataset.options().held_batches + in_making);
  // A few CPU fallbacks per slot without growing their staging.
  for (Slot& slot : slots_) slot.fallback->reserve(std::min<std::size_t>(capacity, 8) * shape->bytes());
  Slot& first = slots_.front();
  auto* pixels = first.buffer.as<std::uint8_t>();
  std::string decoder_line;
  if (options_.decode.enabled && ensure_decoder() && idle)
    decoder_line = decoder()->warm_up(capacity, *shape, pixels, stream);
  if (idle) launch_kernels_once(capacity, *shape);  // on what the decoder left in the first slot
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), "DeviceFeeder::warmup");
  const double seconds = seconds_since(start);
  std::lock_guard lock(mutex_);
  stats_.warmup_seconds += seconds;
  if (!decoder_line.empty()) stats_.warmup = decoder_line;
  return seconds;
}

std::size_t GpuFeeder::copy_fields(Slot& slot, std::size_t index, const Batch& batch) {
  const std::span<const BatchTensor> host = batch.fields();
  slot.field_tensors.clear();
  std::size_t total = 0;
  for (const BatchTensor& t : host) total += round_up(t.view.bytes());
  if (total == 0) return 0;
  const cudaStream_t stream = copy_->get();
  if (slot.fields.bytes() < total) {
    // Boxes per sample change from batch to batch: grow by doubling, so that a warm feeder stops allocating.
    const std::size_t bytes = std::max(total, 2 * slot.fields.bytes());
    slot.fields.reset();  // stream-ordered, after the slot's release point (stage() waited for it)
    slot.fields = pool_->allocate(
        bytes, stream, "DeviceFeeder ring slot " + std::to_string(index) + " (the samples' fields)");
    std::lock_guard lock(mutex_);
    ++stats_.allocations;
  }
  auto* base = slot.fields.as<std::uint8_t>();
  std::size_t offset = 0, copied = 0;
  for (const BatchTensor& t : host) {
    if (t.view.bytes() > 0)
      CONVEYOR_CUDA(
          cudaMemcpyAsync(base + offset, t.view.data, t.view.bytes(), cudaMemcpyHostToDevice, stream),
          kFeederContext);
    BatchTensor& copy = slot.field_tensors.emplace_back(t);
    copy.view.data = base + offset;
    copy.view.device = device_;
    copy.view.pinned = false;
    offset += round_up(t.view.bytes());
    copied += t.view.bytes();
  }
  return copied;
}

std::size_t GpuFeeder::copy_decoded_samples(const Batch& batch, std::uint8_t* device_pixels,
                                            cudaStream_t stream) {
  decoded_runs(batch.samples(), batch.size(), runs_);
  const std::size_t sample_bytes = batch.sample_shape().bytes();
  const std::uint8_t* host = batch.pixels().data();
  copy_to_.clear();
  copy_from_.clear();
  copy_bytes_.clear();
  std::size_t copied = 0;
  for (const SampleRun& run : runs_) {
    copy_to_.push_back(device_pixels + run.first * sample_bytes);
    copy_from_.push_back(host + run.first * sample_bytes);
    copy_bytes_.push_back(run.count * sample_bytes);
    copied += run.count * sample_bytes;
  }
  if (!runs_.empty()) {
    // One call for every run, read in stream order (after the slot's release point the stream waits for).
    cudaMemcpyAttributes attributes{};
    attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    std::size_t first_copy = 0;
    CONVEYOR_CUDA(cudaMemcpyBatchAsync(copy_to_.data(), copy_from_.data(), copy_bytes_.data(), copy_to_.size(),
                                       &attributes, &first_copy, 1, stream),
                  "DeviceFeeder (the decoded samples' pixels, one batched copy)");
  }
  return batch.size() * sample_bytes - copied;
}

void GpuFeeder::make_images(const Batch& batch, const std::uint8_t* device_pixels, void* images,
                            cudaStream_t stream) {
  const ImageShape shape = batch.sample_shape();
  if (augmenter_) {
    if (batch.samples().size() != batch.size())
      throw InvalidArgument(
          "DeviceFeeder: FeederOptions::augment draws from each sample's seed, and this batch "
          "carries none (Batch::samples() is empty)");
    seeds_.resize(batch.size());
    for (std::size_t i = 0; i < batch.size(); ++i) seeds_[i] = batch.samples()[i].seed;
    augmenter_->run({device_pixels, batch.size(), shape, shape.bytes()}, seeds_, images, stream);
  } else {
    ops::normalize_batch_cuda(device_pixels, batch.size(), shape, *options_.normalize, images, stream);
  }
}

DeviceBatch GpuFeeder::stage(Batch batch, StageMode mode) {
  const auto staging_started = std::chrono::steady_clock::now();
  await_device();  // the batch waited for the context here, if it came before it (counted in the stage)
  cuda::DeviceGuard guard(device_);
  {
    std::lock_guard lock(mutex_);
    rethrow_failure_locked();
  }
  const std::optional<std::size_t> taken = held_.take();
  if (!taken) throw_all_slots_held(held_.size());
  const std::size_t index = *taken;
  Slot& slot = slots_[index];
  DeviceBatchAccess::Parts parts;
  std::size_t copied = 0, not_copied = 0;
  bool pageable = false;
  const std::size_t deferred = batch.deferred_count();
  double decode_host_s = 0;
  std::shared_ptr<DecodeSplit> split;
  cudaStream_t stream = copy_->get();
  try {
    {
      // The previous copy out of this slot's pinned batch was issued at least one stage() ago and has
      // almost always finished; if not, the copy engine is the bottleneck and waiting is the right
      // back-pressure.
      std::unique_lock lock(mutex_);
      if (deferred > 0) split = split_;
      if (slot.in_flight) {
        ++stats_.host_waits;
        const ProgressWatch::Doing doing("waiting for the last copy out of ring slot",
                                         static_cast<long long>(index));
        changed_.wait(lock, [&] { return !slot.in_flight || failure_; });
      }
      rethrow_failure_locked();
    }
    DeviceBatchAccess::check_augment(options_, batch);
    CONVEYOR_CUDA(cudaStreamWaitEvent(stream, slot.released.get(), 0), kFeederContext);
    ensure_capacity(slot, index, std::max(batch.capacity(), batch.size()), batch.sample_shape());
    const std::span<const std::uint8_t> pixels = batch.pixels();
    const std::span<const std::int64_t> labels = batch.labels();
    auto* device_pixels = slot.buffer.as<std::uint8_t>();
    auto* device_labels = reinterpret_cast<std::int64_t*>(device_pixels + slot.label_offset);
    pageable = !is_page_locked(pixels.data());
    slot.start.record(stream);
    if (deferred > 0 && !options_.decode.copy_whole_batch) {
      not_copied = copy_decoded_samples(batch, device_pixels, stream);
    } else {
      CONVEYOR_CUDA(
          cudaMemcpyAsync(device_pixels, pixels.data(), pixels.size_bytes(), cudaMemcpyHostToDevice, stream),
          kFeederContext);
    }
    CONVEYOR_CUDA(
        cudaMemcpyAsync(device_labels, labels.data(), labels.size_bytes(), cudaMemcpyHostToDevice, stream),
        kFeederContext);
    const std::size_t field_bytes = copy_fields(slot, index, batch);
    parts.fields = slot.field_tensors;
    if (deferred > 0) {
      // The copy above wrote whatever the deferred slots held on the host; their pixels come now.
      slot.decode_start.record(stream);
      const ProgressWatch::Doing doing("decoding the deferred samples, images:",
                                       static_cast<long long>(deferred));
      decode_host_s = decode_deferred(slot, batch, device_pixels, split.get());
      slot.decode_end.record(stream);
    }
    const ImageShape shape = batch.sample_shape();
    const auto n = static_cast<std::int64_t>(batch.size());
    // The users' pixel twins, in the chain's order, in place on the slot's pixels, before the fused augment.
    for (const std::unique_ptr<DevicePixelOp>& op : pixel_ops_)
      op->run({device_pixels, batch.size(), shape, device_}, batch.samples(), stream);
    if (options_.normalize) {
      void* images = device_pixels + slot.images_offset;
      make_images(batch, device_pixels, images, stream);
      parts.images = normalized_images(images, batch.size(), shape, *options_.normalize, device_, false);
      parts.normalization = options_.normalize;
      parts.augmented = augmenter_.has_value();
    }
    slot.ready.record(stream);
    if (mode.hand_over) CONVEYOR_CUDA(cudaStreamWaitEvent(consumer_, slot.ready.get(), 0), kFeederContext);
    copied = pixels.size_bytes() - not_copied + labels.size_bytes() + field_bytes;
    parts.pixels = TensorView::contiguous(device_pixels, DType::uint8,
                                          {n, shape.height, shape.width, shape.channels}, device_);
    parts.labels = TensorView::contiguous(device_labels, DType::int64, {n}, device_);
  } catch (...) {
    // Part of the batch may still be on its way: its memory must not go back to the pool before that.
    cudaStreamSynchronize(stream);
    held_.give_back(index);
    throw;
  }
  slot.consumer = consumer_;
  slot.samples.assign(batch.samples().begin(), batch.samples().end());
  parts.samples = slot.samples;
  parts.size = batch.size();
  parts.shape = batch.sample_shape();
  parts.device = device_;
  parts.sequence = batch.sequence();
  parts.epoch = batch.epoch();
  {
    std::lock_guard lock(mutex_);
    slot.readers.clear();
    slot.in_flight = true;
    if (stats_.batches == 0)
      stats_.first_stage_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - staging_started).count();
    ++stats_.batches;
    stats_.bytes_not_copied += not_copied;
    if (pageable) ++stats_.pageable;
    queue_.push_back({index, std::move(batch), copied, deferred, decode_host_s, std::move(split)});
  }
  changed_.notify_all();
  // The first batch is on its way without waiting for nvJPEG: now it may come ready (start at once), and
  // the batch buffers be made ahead.
  start_planned_startup();
  host_memory_->resume_making_ahead();
  // The hold is made last: from here on its destructor, not this function, gives the slot back.
  return DeviceBatchAccess::make(std::make_shared<SlotHold>(shared_from_this(), index), parts);
}

void GpuFeeder::hand_over(const DeviceBatch& batch) {
  const SlotHold* hold = DeviceBatchAccess::hold(batch);
  if (hold == nullptr) return;
  cuda::DeviceGuard guard(device_);
  CONVEYOR_CUDA(cudaStreamWaitEvent(slots_[hold->slot()].consumer, slots_[hold->slot()].ready.get(), 0),
                kFeederContext);
}

void GpuFeeder::release(std::size_t index) noexcept {
  Slot& slot = slots_[index];
  try {
    cuda::DeviceGuard guard(device_);
    std::vector<cudaStream_t> readers;
    {
      std::lock_guard lock(mutex_);
      readers.swap(slot.readers);
    }
    // Join every other reader into the consumer stream, then mark the consumer's point: the next copy
    // into this slot waits for it.
    for (cudaStream_t reader : readers) {
      slot.joined.record(reader);
      CONVEYOR_CUDA(cudaStreamWaitEvent(slot.consumer, slot.joined.get(), 0),
                    "DeviceFeeder (releasing a batch)");
    }
    slot.released.record(slot.consumer);
  } catch (...) {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::current_exception();
  }
  held_.give_back(index);
  changed_.notify_all();
}

void GpuFeeder::return_batches() {
  for (;;) {
    InFlight item;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    Slot& slot = slots_[item.slot];
    float milliseconds = 0, decode_ms = 0;
    std::exception_ptr failure;
    try {
      const ProgressWatch::Doing doing("waiting for the copy and GPU work of ring slot",
                                       static_cast<long long>(item.slot));
      slot.ready.synchronize();
      milliseconds = cuda::Event::elapsed_ms(slot.start, slot.ready);
      if (item.deferred > 0) decode_ms = cuda::Event::elapsed_ms(slot.decode_start, slot.decode_end);
    } catch (...) {
      failure = std::current_exception();
    }
    // The GPU decoder's cost per batch: its GPU time, or the feeding thread's time when that is longer.
    if (!failure && item.split)
      item.split->measure(std::max(decode_ms / 1000.0, item.decode_host_s), item.deferred);
    // The copy is over (or the context is lost and nothing reads the memory any more): the pinned buffer
    // goes back to its pool now, on this thread, outside the lock.
    item.batch.release();
    {
      std::lock_guard lock(mutex_);
      slot.in_flight = false;
      if (failure) {
        if (!failure_) failure_ = failure;
      } else {
        ++stats_.copies;
        stats_.bytes += item.bytes;
        stats_.copy_seconds += milliseconds / 1000.0;
        decoded_.gpu_seconds += decode_ms / 1000.0;
      }
    }
    changed_.notify_all();
  }
}

void GpuFeeder::synchronize() {
  await_device();
  cuda::DeviceGuard guard(device_);
  copy_->synchronize();
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    if (failure_) return true;
    for (const Slot& slot : slots_)
      if (slot.in_flight) return false;
    return true;
  });
  rethrow_failure_locked();
}

FeederStats GpuFeeder::stats() const {
  FeederStats stats;
  {
    std::lock_guard lock(mutex_);
    stats = stats_;
    stats.gpu_decoded = decoded_.gpu;
    stats.cpu_fallbacks = decoded_.cpu;
    stats.decode_failures = decoded_.failures;
    stats.fallback_reasons = decoded_.reasons;
    stats.decode_host_seconds = decoded_.host_seconds;
    stats.decode_wait_seconds = decoded_.nvjpeg.wait;
    stats.decode_check_seconds = decoded_.nvjpeg.check;
    stats.decode_submit_seconds = decoded_.nvjpeg.decode;
    stats.decode_resize_seconds = decoded_.nvjpeg.resize;
    stats.decode_gpu_seconds = decoded_.gpu_seconds;
    for (std::size_t p = 0; p < decoded_.paths.size(); ++p)
      if (decoded_.paths[p] > 0)
        stats.gpu_decode_paths[cuda::to_string(static_cast<cuda::NvjpegPath>(p))] = decoded_.paths[p];
    if (split_) {
      stats.gpu_share = split_->share();
      stats.declined = split_->declined_count();
      for (const auto& [reason, count] : split_->declined_reasons()) stats.fallback_reasons[reason] += count;
    }
  }
  stats.held = held_.held();
  stats.host_blocks = host_memory_->made();
  stats.host_blocks_on_demand = host_memory_->made_on_demand();
  stats.host_blocks_on_demand_seconds = host_memory_->on_demand_seconds();
  stats.host_blocks_made_ahead = host_memory_->made_ahead();
  return stats;
}

}  // namespace conveyor::detail
