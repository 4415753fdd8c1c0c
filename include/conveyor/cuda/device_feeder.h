// Moves ready batches to where the training step reads them, overlapped with everything else.
//
//   DeviceFeeder feeder(resolve(DeviceSpec::parse("auto")), {.depth = 3, .normalize = params});
//   for (DeviceBatch& batch : feeder.feed(dataset)) model.step(batch.images(), batch.labels());
//
// On a GPU each batch is copied with cudaMemcpyAsync on the feeder's own copy stream into one of `depth`
// device buffers (a ring), optionally normalized there (uint8 NHWC -> float NCHW/NHWC), and made ready on
// the consumer stream: work the consumer enqueues on that stream after stage() returns sees the data. The
// pinned host buffer goes back to its pool as soon as its copy has finished. A DeviceBatch handle holds
// its ring slot; releasing it lets the feeder reuse the slot once the consumer stream passes that point
// (conveyor/cuda/device_batch.h). The consumer stream is the feeder's own unless set otherwise, and other
// streams may read a batch too (conveyor/cuda/stream.h, a CUDA-only header with the typed handles).
//
// On the CPU nothing is copied: the DeviceBatch views the batch's own memory (and normalized images made on
// the CPU, when asked for), kept out of its pool while the handle lives.
//
// Work after the copy (FeederOptions::augment, pixel_ops, decode; docs/architecture.md, "GPU side"):
// - augment: the cheap per-pixel ops (flip_horizontal, distort) run on the GPU as one fused kernel with
//   normalize, on the copy stream, into DeviceBatch::images(). Each sample's parameters are drawn on the CPU
//   from its seed by the CPU ops' own draws, so the images equal those of the same ops run as CPU maps
//   before the feeder, bit for bit. On a CPU placement the same ops run on the CPU (feed() appends them to
//   the chain as maps; stage() applies them to its copy), so a program gives the same images() wherever it
//   runs. DeviceBatch::pixels() are the batch as the pipeline made it: before these ops on a GPU.
// - pixel_ops: users' pixel ops whose CUDA twins a GpuTwins registry knows (conveyor/cuda/gpu_twins.h), run
//   on the batch's pixels in place, in the chain's order, before the fused kernel (so pixels() hold their
//   result); on a CPU placement the ops themselves run as the chain's maps, drawing as they would there.
// - decode: hybrid JPEG decoding. feed() lets the chain's last map, decode_random_resized_crop, leave a share
//   of the images to the feeder (conveyor/defer.h): for those the pipeline's workers read only the header
//   and draw the crop window, and the feeder decodes them with nvJPEG (the GPU's hardware decoder where it
//   has one) straight into the device batch, on a thread of its own, then runs the augmentation. The share
//   is a fixed function of each sample's index when the pipeline is deterministic (same settings, same
//   bytes, at any thread count), and moves so that neither the CPU workers nor the GPU decoder wait on the
//   other when it is not. Images nvJPEG refuses are decoded on the CPU by the feeder and counted by reason
//   (FeederStats). Without a GPU or without nvJPEG everything is decoded by the pipeline, as before. In a
//   pipeline that is not deterministic, feed() does not wait for nvJPEG: the CPU decodes everything until
//   nvJPEG is ready on a thread of the feeder, then the GPU takes its share (DeviceDecode::start_at_once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_batch.h"
#include "conveyor/cuda/gpu_twins.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/progress_watch.h"
#include "conveyor/ranks.h"

namespace conveyor {

namespace cuda {
class DeviceMemoryPool;  // src/device/device_memory.h; exists only in builds with CUDA
}
namespace detail {
class FeederBackend;
class Lookahead;
}  // namespace detail

// The per-pixel ops the feeder runs after the copy, fused with normalize (FeederOptions::normalize is then
// required), in the CPU chain's order: flip, then distort. Each is the SampleOp of the same name
// (conveyor/ops/sample_ops.h), drawing from Rng(sample seed, its stream).
struct DeviceAugment {
  std::optional<double> flip_horizontal{};       // ops::flip_horizontal(p)
  std::optional<ops::DistortOptions> distort{};  // ops::distort(options), hue included
  // The ops' whole Rng streams, op_stream(kind, position in the chain), as the SampleOps draw in a chain
  // (place_pixel_ops sets them; the defaults are those of a flip and a distort as the chain's first maps).
  std::uint64_t flip_stream = op_stream(ops::stream::flip_horizontal, 0);
  std::uint64_t distort_stream = op_stream(ops::stream::distort, 0);

  bool empty() const noexcept { return !flip_horizontal && !distort; }
};

// Hybrid decoding: the share of images nvJPEG decodes on the GPU while the pipeline's workers decode the
// rest.
struct DeviceDecode {
  bool enabled = false;
  // The share of samples the GPU decodes: all the time in a deterministic pipeline, at the start otherwise.
  double share = 0.5;
  // In a pipeline with deterministic = false: move the share, batch by batch, to where the CPU workers and
  // the GPU decoder take the same time per batch (from their measured costs per image).
  bool adapt = true;
  bool hardware = true;  // nvJPEG's hardware decoder where the GPU has one (A100, H100, H200)
  // nvJPEG's hardware decoder by default buffers images beyond the batch it was given, to keep its engines
  // busy. Beside a training step that made the feeder slower (bench/results/2026-11-26-h100-run8 and -run9:
  // prefetch 11,223-13,452 img/s with it, 14,027-15,319 without, in the same calls); without a step it made
  // no clear difference. false (the default) turns it off (NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE).
  bool hardware_pipelining = false;
  bool roi = true;       // decode only the crop window where nvJPEG allows it
  // nvJPEG's hardware decoder takes its buffers from a pool sized at warm-up (nvjpegDecodeBatchedPreAllocate)
  // and kept, instead of allocating and freeing device memory inside its decode calls. A free (cuMemFree)
  // waits for the whole device: for every training step queued ahead of the decode, and in one process
  // driving several GPUs for an NCCL all-reduce that waits in turn for another replica's thread (the hang
  // of 2026-11-27, docs/architecture.md). false: nvJPEG's own way, for comparison.
  bool hardware_pool = true;
  // An adapting split starts where the last run with the same key settled (its share and per-image costs),
  // kept in a file beside the cuDNN algorithm cache (memory_folder, else $CONVEYOR_ALGORITHM_CACHE ("off":
  // nowhere), $XDG_CACHE_HOME/conveyor or ~/.cache/conveyor). The key: the GPU, driver and nvJPEG, the
  // pipeline's threads, the batch and its shape, the data set (its size and first and last paths), and
  // memory_key: what else moves the balance that the feeder cannot see, such as the training step beside
  // it ("resnet18-bf16" ...) or the ranks sharing the host. Off: every run starts at `share`.
  bool remember_share = true;
  std::string memory_key;
  std::string memory_folder;
  // In a pipeline with deterministic = false: feed() returns at once and the CPU workers decode every image
  // while nvJPEG, its hardware pool and its kernels come ready on a thread of the feeder (what warmup()
  // does, with a throwaway batch through every path); the split then opens to the GPU at its starting
  // share. So the first batch comes as soon as the CPU alone makes it (issue 41: it came 1.3 s later when
  // nvJPEG was made ready first); nvJPEG's set-up begins once that batch is on its way, so that nothing on
  // its way waits behind it. false: feed() makes nvJPEG ready before the first batch. A
  // deterministic pipeline always does: which samples the GPU decodes must not depend on when it was ready.
  // warmup() before feed() makes everything ready up front either way.
  bool start_at_once = true;
  // Start at once: the split opens as soon as the first of the feeder's two RGB decoders (which take
  // batches in turn) is made and warm; the second is made behind it and joins when ready, so the GPU
  // decodes sooner (one decoder alone makes each batch wait for the one before on the GPU meanwhile).
  // false: both are made and warm before the split opens.
  bool open_before_second = true;
  // Host threads submitting to nvJPEG: 1, the feeder's staging thread alone submits each batch to its two
  // RGB decoders in turn; 2, each decoder takes half of every batch's GPU images, the second on a thread of
  // its own. Without a training step beside it, 2 fed 1.057x on an H200 (2026-11-29: nvJPEG's host work,
  // 41 us an image, had kept the one thread busy 92 % of the time). Beside a step, several threads were
  // slower on an H100 (2026-11-27, an earlier decoder: their calls into nvJPEG took turns), and 2 has not
  // been measured there with this one: 1 stays the default.
  int decode_threads = 1;
  // Where the GPU has hardware JPEG engines: what they refuse (progressive, 4:1:1, ...) is decoded by nvJPEG's
  // GPU hybrid path, Huffman decoding on the SMs beside the training step (true); false: on the CPU by the
  // feeder (FeederStats counts them as "nvjpeg: engines_refused"), so that only the engines decode on the GPU.
  bool gpu_hybrid = true;
  // The batch's whole pixel buffer crosses to the device, the deferred samples' slots included (the decoder
  // overwrites them); false: only the samples the pipeline decoded, as runs of slots in one batched copy
  // (cudaMemcpyBatchAsync), so that the GPU's share of the images costs no bus or memory traffic twice.
  bool copy_whole_batch = true;
};

// Where feed() puts the pipeline's threads and its page-locked batches on a host of several GPUs, one
// process each (issue 41): next to the feeder's GPU (conveyor/cuda/host_locality.h).
struct HostPlacement {
  // With several processes on this host (Ranks::local_world_size > 1) and a dataset whose
  // PipelineOptions::cpus is empty: the pipeline's threads and the feeder's staging thread on this rank's
  // share of the CPUs close to its GPU, shared with the host's other ranks whose GPUs are close to the
  // same CPUs (cpus_near_gpu); one thread per CPU when the dataset left its threads at 0. A single process
  // keeps every CPU it may use. false: wherever the process runs.
  bool cpus_near_gpu = true;
  // The page-locked batch buffers bound to the GPU's NUMA node, on a host of more than one node
  // (FeederStats::host_memory says where they went and why).
  bool memory_near_gpu = true;
  // This process's place among the host's processes; nullopt: from the launcher's variables
  // (ranks_from_environment()).
  std::optional<Ranks> ranks = std::nullopt;
};

struct FeederOptions {
  // Ring slots: batches that may be on their way or held by the consumer at once; 1 to 8. 3 lets one batch
  // be copied while one is computed on and one waits.
  int depth = 3;
  // Also make the model's input on the device: (pixel - mean) / std per channel, as float32, float16 or
  // bfloat16, NCHW or NHWC (DeviceBatch::images()). Only bytes cross the bus either way.
  std::optional<ops::NormalizeParams> normalize{};
  // Per-pixel ops run after the copy, before normalize (see the top of this file).
  DeviceAugment augment{};
  // Users' pixel ops with GPU twins, run in this order on each batch's pixels after the copy, before
  // `augment` (place_pixel_ops fills it; conveyor/cuda/gpu_twins.h). On a CPU placement feed() runs the ops
  // themselves as maps.
  std::vector<PlacedPixelOp> pixel_ops{};
  // What place_pixel_ops may move, by the twin name each op gives; null: GpuTwins::library().
  std::shared_ptr<const GpuTwins> gpu_twins = nullptr;
  // Hybrid CPU/GPU JPEG decoding (see the top of this file); used by feed().
  DeviceDecode decode{};
  // The feeder's own kernels on the GPU (the augmentation, the crop-resize after nvJPEG) use at most this
  // many thread blocks per image (0: as many as one pass over the image needs). Fewer blocks take longer but
  // hold fewer of the GPU's multiprocessors at once, leaving more to a training step that runs beside them
  // (issue 36: the step computes slower beside the decoder); the pixels are the same either way.
  int kernel_blocks_per_image = 0;
  // The feeder's threads (its staging thread with decoding, its copy returner) join this watch and say
  // what they wait for, so that a run that stops making progress names them (conveyor/progress_watch.h).
  std::shared_ptr<ProgressWatch> progress_watch = nullptr;
  // On a GPU: the pipeline's CPUs and the batches' NUMA node next to the GPU (see HostPlacement).
  HostPlacement host{};
  // On a GPU: make the CUDA context and everything of the feeder's in it (streams, ring, page-locked memory)
  // on a thread of the feeder's own, so that the constructor returns at once and feed()'s CPU workers
  // decode the first batch meanwhile (about 0.1 s on an H200); the first batch waits for it only if it comes
  // first. A context that cannot be made is then reported by the feeder's first use rather than by its
  // constructor. false: all of it made before the constructor returns.
  bool set_up_behind = true;
  // On a GPU: once a pipeline had to wait for a page-locked batch buffer (its source holds more at once than
  // warmup() made, as a data service's own splits beside its received batches do), a thread of the feeder's
  // keeps this many of that size ready, so that the next one is not a cudaHostAlloc of tens of
  // milliseconds on the pipeline's way. 0 (the default): each made when asked for. Off by default because
  // on an H200 the step fed by the data service ran 0.2-4.7 % faster without it, in 12 of 12 rounds on three
  // machines; with it the GPU idled 0.1-3.6 % of the time, without it 0.0-2.6 %
  // (bench/results/2026-11-30-h200-service-host-blocks-ahead).
  std::size_t host_blocks_ahead = 0;
};

struct FeederStats {
  std::uint64_t batches = 0;   // stage() calls that staged a batch
  std::uint64_t copies = 0;    // host-to-device copies finished (pixels and labels of one batch count once)
  std::uint64_t bytes = 0;     // bytes copied to the device by finished copies
  double copy_seconds = 0;     // time those copies took on the copy stream (CUDA events)
  std::uint64_t pageable = 0;  // batches not in page-locked memory: staged by the driver through a bounce
                               // buffer, slower and partly synchronous with the host
  std::uint64_t allocations = 0;  // ring buffers allocated (first batch, or a larger batch)
  std::uint64_t host_blocks = 0;  // page-locked batch buffers the feeder made for its pipelines (kept)
  // Of those, the ones a pipeline waited for (none was kept ready: warmup() and the decoder's startup make
  // theirs ahead), and the seconds their page-locking took.
  std::uint64_t host_blocks_on_demand = 0;
  double host_blocks_on_demand_seconds = 0;
  // Of those, the ones made ahead on a thread of the feeder's after a pipeline had waited for one of that
  // size: what a source holding more buffers than warm-up made (a data service's own splits) takes next.
  std::uint64_t host_blocks_made_ahead = 0;
  std::uint64_t host_waits = 0;   // stage() calls that waited for an earlier copy out of the same slot
  std::uint64_t held = 0;         // DeviceBatch handles (or views of them) alive now

  // Hybrid decoding (FeederOptions::decode). The images the pipeline decoded are its PipelineStats'
  // elements_out - deferred; these are the deferred ones.
  std::string decoder;                // what decodes on the GPU, or why nothing does
  std::uint64_t gpu_decoded = 0;      // deferred images nvJPEG decoded into the ring
  std::uint64_t cpu_fallbacks = 0;    // deferred images nvJPEG refused, decoded on the CPU by the feeder
  std::uint64_t decode_failures = 0;  // deferred images neither could decode (slot zeroed; see feed())
  std::uint64_t declined = 0;         // images the op was asked to defer but decoded itself
  // Why, per reason: "op: cmyk" (declined by the op), "nvjpeg: NVJPEG_STATUS_JPEG_NOT_SUPPORTED" (refused
  // by nvJPEG, decoded by the feeder), "failed: <error>" (neither could).
  std::map<std::string, std::uint64_t> fallback_reasons;
  double gpu_share = 0;            // the share of images the op is asked to defer now
  double decode_host_seconds = 0;  // the feeder thread's time in nvJPEG calls and CPU fallbacks
  double decode_gpu_seconds = 0;   // the decoder's time on the GPU (CUDA events)
  // Of decode_host_seconds, nvJPEG's part by phase: waiting for the decoder's previous batch on the GPU,
  // parsing headers and choosing each image's path, nvJPEG's decode calls, the crop-resize launch. The
  // rest is the CPU fallbacks.
  double decode_wait_seconds = 0;
  double decode_check_seconds = 0;
  double decode_submit_seconds = 0;
  double decode_resize_seconds = 0;
  // DeviceFeeder::warmup: its seconds, and what the GPU decoder's warm-up decoded by path (or the startup's,
  // DeviceDecode::start_at_once).
  double warmup_seconds = 0;
  std::string warmup;
  // How the GPU decoder came ready (DeviceDecode::start_at_once): before feed(), made by feed() before the
  // first batch, or at once behind the CPU workers, and the seconds from feed() to the split's opening to
  // the GPU (0 when it was open from the first sample); at once, also where its set-up's seconds went
  // ("library 0.001 s, decoder 0.769 s (stream and events 0.001 s, hardware handle 0.673 s, ...),
  // page-locked batch buffers 0.072 s, warm-up of the first decoder 0.061 s; then the split opened at
  // 0.623; the second decoder joined at 1.504 s (...)").
  std::string startup;
  double decoder_ready_seconds = 0;
  // DeviceDecode::open_before_second: the seconds from feed() to the second decoder's joining (0: made
  // with the first, or not yet).
  double second_decoder_seconds = 0;
  // The host time of the first stage() (the feeder's part of the first batch's way: waiting for the
  // context if it was not there yet, ring buffers, the first copy and kernel launches).
  double first_stage_seconds = 0;
  // How long making the CUDA context and the feeder's things in it took (FeederOptions::set_up_behind).
  double device_setup_seconds = 0;
  std::string device_setup;  // its phases: "context 0.110 s, streams 0.001 s, ..."
  // The GPU-decoded images by nvJPEG path: "hardware", "hardware_roi", "software", "software_roi" (GPU
  // hybrid or Huffman on the CPU for what the engines refuse).
  std::map<std::string, std::uint64_t> gpu_decode_paths;
  // Bytes of pixels the copies left out: the deferred samples' slots (DeviceDecode::copy_whole_batch off).
  std::uint64_t bytes_not_copied = 0;
  // Where the last feed() ran its pipeline (empty: wherever the process may run) and why, and where the
  // page-locked batches live (HostPlacement).
  std::vector<int> pipeline_cpus;
  std::string pipeline_cpus_reason;
  std::string host_memory;
  // Where the adapting split started (a remembered share, or why not) and, at the end, where it was kept.
  std::string split_memory;
};

// The default placement of the cheap per-pixel ops. Takes a chain's maps, in order, and, when `placement` is
// a GPU, moves the trailing ops whose GPU twin the registry knows (options.gpu_twins, by SampleOp::gpu_twin;
// null: GpuTwins::library()) into the feeder: the library's flip_horizontal and distort (at most one of each,
// and only with options.normalize) into options.augment, where they run fused with normalize; a user's pixel
// twin into options.pixel_ops, where it runs on the pixels before them (so a flip or distort before a pixel
// twin in the chain stays). Returns the maps that stay in the pipeline. A moved op draws as it would have at
// its index in `maps`: build the chain from exactly these maps, with no filter before them:
//   FeederOptions options{.normalize = trainer.input_normalization()};
//   std::vector<SampleOp> maps = place_pixel_ops({ops::decode_random_resized_crop(224),
//                                                 ops::flip_horizontal(0.5), ops::distort(jitter)},
//                                                placement, options);
// On a CPU placement the maps come back unchanged: there they run as maps either way. Moving changes nothing
// in images(): each twin draws each sample's parameters as its op would and gives the same bytes. It also
// leaves decode_random_resized_crop last, where it may defer to the GPU.
std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options);
// The same for the maps of a dataset whose samples have these fields (Dataset::fields()): with a field that
// follows the image (a mask, boxes) a geometric twin (the flip) stays in the pipeline, which moves them with
// the image (the feeder moves images only); distort, a colour op, may still move.
std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options, const FieldSet& fields);
// The same for a chain that is already built (Python's Dataset.to_device uses it): `dataset` without the
// maps that moved, batched and prefetched as it was. The moved ops draw from the positions they had in the
// chain (filters before them count, as in the pipeline), so images() are the same either way. A dataset
// whose samples have fields that follow the image keeps its flip (see the overload above).
BatchedDataset place_pixel_ops(const BatchedDataset& dataset, const Placement& placement,
                               FeederOptions& options);
// Whether the chain's last map may leave images to the feeder's GPU decoder: its twin (in options.gpu_twins)
// says it defers (decode_random_resized_crop). Python's to_device turns GPU decoding on by it.
bool may_defer_to_gpu(const BatchedDataset& dataset, const FeederOptions& options);

class DeviceBatchIterator;

class DeviceFeeder {
 public:
  // On a GPU placement the feeder owns a device memory pool for its ring, without a limit.
  explicit DeviceFeeder(const Placement& placement, FeederOptions options = {});
  // The ring comes from `pool` (shared with the model, under its limit); it must outlive the feeder and
  // belong to the placement's device.
  DeviceFeeder(const Placement& placement, cuda::DeviceMemoryPool& pool, FeederOptions options = {});
  // Waits for the copies in flight and gives every pinned batch back. Batches still held keep their ring
  // memory alive until they are released.
  ~DeviceFeeder();
  DeviceFeeder(const DeviceFeeder&) = delete;
  DeviceFeeder& operator=(const DeviceFeeder&) = delete;

  // Starts moving `batch` to the consumer and returns the handle that holds it there. Throws
  // InvalidArgument for an empty batch, Error when every ring slot is held by a live DeviceBatch (release
  // one first), DeviceMemoryError when a ring buffer does not fit, DeviceError when a CUDA call (or an
  // earlier copy) failed.
  DeviceBatch stage(Batch batch);

  // Iterates `dataset` through this feeder: its batches live in memory the feeder copies fastest
  // (page-locked for a GPU) and the pipeline keeps room for the batches the feeder holds. Each DeviceBatch
  // of a range-for is released when the loop moves on. The feeder must outlive the iterator.
  // On a CPU placement it appends the augment ops to the chain as maps, and leaves the consumer (the
  // training step on the CPU) a core: threads = cores - 1 when the dataset's threads is 0. On a GPU with
  // FeederOptions::decode enabled and nvJPEG present, it lets the chain's last map defer samples to the
  // feeder, and stages batches on a thread of its own (a "GPU decoder" track in the dataset's trace) that
  // keeps up to depth - 1 batches ready ahead of the consumer. A deferred image that neither nvJPEG nor the
  // CPU can decode fails its batch with PipelineError under on_error = fail; under skip its slot is zeroed
  // and counted (FeederStats::decode_failures): a batch cannot shrink after it was made.
  DeviceBatchIterator feed(const BatchedDataset& dataset);
  // The same from where an earlier iterator of `dataset` stood (BatchedDataset::begin(state)).
  DeviceBatchIterator feed(const BatchedDataset& dataset, const IteratorState& state);
  // `dataset` as feed() runs it: held_batches at least depth(), batches in memory this feeder copies fastest.
  BatchedDataset fed(const BatchedDataset& dataset) const;

  // Makes ready, before the first batch, what feed(dataset) would otherwise make under its first batches
  // (a GPU placement; on the CPU it does nothing): the ring's device buffers for the dataset's batches, the
  // page-locked batch buffers its pipeline will take (kept by the feeder: neither made while batches are
  // timed nor freed while it lives), the augmentation's kernels, and with FeederOptions::decode nvJPEG
  // itself: the library, both decoders, the hardware decoder's pool, and a throwaway batch of synthetic
  // JPEGs through every decode path, so that CUDA loads their kernels now. Waits for the GPU; returns its
  // seconds. Call it where the model warms up (Trainer::warmup), before feed() (not while an iterator of
  // this feeder runs: the GPU work uses the first ring slot); it may run on a thread of its own beside the
  // model's warm-up. feed() works without it: it makes nvJPEG ready behind the CPU workers
  // (DeviceDecode::start_at_once), or before the first batch, and the rest on its first batches.
  double warmup(const BatchedDataset& dataset);

  // Waits until every copy has finished and every pinned batch has been given back.
  void synchronize();

  FeederStats stats() const;
  const Placement& placement() const noexcept;
  const FeederOptions& options() const noexcept;
  int depth() const noexcept { return options().depth; }

 private:
  friend struct detail::DeviceBatchAccess;
  DeviceBatchIterator start(const BatchedDataset& dataset, const IteratorState* state);

  Placement placement_;
  FeederOptions options_;
  std::shared_ptr<detail::FeederBackend> backend_;  // shared with every DeviceBatch it handed out
};

// A dataset's batches, staged by a feeder: call next(), or use it in a range-for. Move-only; not for
// concurrent use from several threads.
class DeviceBatchIterator {
 public:
  // The next batch, staged; std::nullopt at the end. Errors as BatchIterator::next() and
  // DeviceFeeder::stage().
  std::optional<DeviceBatch> next();
  PipelineStats stats() const;
  // Where the pipeline stood after the last batch next() handed out (BatchIterator::state()), to resume
  // with DeviceFeeder::feed(dataset, state). With the staging thread, the state recorded with that batch:
  // the pipeline itself is up to depth - 1 batches further.
  IteratorState state() const;

  DeviceBatchIterator(DeviceBatchIterator&&) noexcept;
  DeviceBatchIterator& operator=(DeviceBatchIterator&&) noexcept;
  // Stops the feeder's staging thread (if any) and the pipeline.
  ~DeviceBatchIterator();

  // Range-for support: `for (DeviceBatch& batch : feeder.feed(dataset))`. Each batch is released when the
  // loop moves on, before the next one is staged.
  class Cursor {
   public:
    using value_type = DeviceBatch;
    using difference_type = std::ptrdiff_t;
    DeviceBatch& operator*() const { return owner_->current(); }
    Cursor& operator++() {
      owner_->advance();
      return *this;
    }
    void operator++(int) { owner_->advance(); }
    friend bool operator==(const Cursor& cursor, std::default_sentinel_t) { return cursor.done(); }

   private:
    bool done() const { return owner_->at_end(); }
    friend class DeviceBatchIterator;
    explicit Cursor(DeviceBatchIterator* owner) : owner_(owner) {}
    DeviceBatchIterator* owner_;
  };
  Cursor begin() { return Cursor(this); }
  std::default_sentinel_t end() const noexcept { return {}; }

 private:
  friend class DeviceFeeder;
  DeviceBatchIterator(DeviceFeeder& feeder, std::optional<BatchIterator> batches,
                      std::unique_ptr<detail::Lookahead> lookahead);
  bool at_end();
  DeviceBatch& current();
  void advance();

  DeviceFeeder* feeder_;
  std::optional<BatchIterator> batches_;  // empty when the lookahead thread owns the pipeline
  std::unique_ptr<detail::Lookahead> lookahead_;
  std::optional<DeviceBatch> current_;
  bool fetched_ = false;
  bool augmented_ = false;  // the pipeline ran FeederOptions::augment (feed() on the CPU)
};

}  // namespace conveyor
