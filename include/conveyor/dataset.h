// A typed, chainable description of an input pipeline, in the spirit of tf.data:
//
//   auto train = conveyor::Dataset::image_folder("photos/train")
//                    .shuffle()                  // the whole epoch, seeded from the pipeline seed
//                    .repeat(epochs)
//                    .map(conveyor::ops::decode_random_resized_crop(224))
//                    .map(conveyor::ops::flip_horizontal(0.5))
//                    .with_options({.threads = 16, .seed = 42})
//                    .batch(256)
//                    .prefetch(4);
//   for (const conveyor::Batch& batch : train) step(batch);
//
// A Dataset is an immutable value (a shared pointer to immutable nodes): copying one is cheap and every
// method returns a new Dataset. Nothing runs until begin(), which makes an iterator that owns all running
// state: a oneTBB task arena, a driver thread running tbb::parallel_pipeline, the batch buffer pool and
// the queue of ready batches. Many iterators of one Dataset may run at once.
//
// Meaning of the chain:
// - shuffle, repeat, shard, skip and take decide which elements run and in what order. They act on the
//   source's stream in the order they are called (take before repeat takes per epoch, after it in
//   total; shard before shuffle splits the files, after it splits one global order).
// - An element's index is its position in the epoch's order after the last shuffle (the source order
//   when there is none); shard, skip and take keep it. Its seed is sample_seed(options.seed, epoch,
//   index): results are bitwise the same at any thread count and any shard count.
// - Every random decision derives from the pipeline seed (PipelineOptions::seed): a shuffle without its
//   own seed, and each op's draws, Rng(sample.seed, op_stream(kind, position of the op among the maps and
//   filters)) (conveyor/random.h), so two ops of one kind in one chain draw independently.
// - Options: with_options sets the fields it is given and keeps the rest (PipelineOptionChanges), so that
//   options set in two places (a library's defaults, then the user's threads) add up instead of the last
//   call silently resetting the first one's fields to their defaults.
// - An iterator's state (Iterator::state(), conveyor/iterator_state.h) starts another iterator where it
//   stood: after a crash, at another thread count, or at another shard count.
// - map and filter run on each element, in the order called, in parallel on the arena. Maps may be
//   called before or after the ordering methods (a map only depends on its element and seed), but
//   shuffle, shard, skip and take may not follow a filter (InvalidArgument): they would act on a
//   stream whose length depends on the filter's results. An element a filter rejects is not delivered.
// - SampleOp::apply and filter predicates are called concurrently from several threads: they must
//   not share mutable state.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/defer.h"
#include "conveyor/fields.h"
#include "conveyor/host_memory.h"
#include "conveyor/image.h"
#include "conveyor/iterator_state.h"
#include "conveyor/mask.h"
#include "conveyor/ranks.h"
#include "conveyor/sample.h"
#include "conveyor/shards.h"
#include "conveyor/source.h"
#include "conveyor/stats.h"

namespace conveyor {

class TraceRecorder;

// What a failing element does to the pipeline.
enum class OnError : std::uint8_t {
  fail,  // next() throws PipelineError when it reaches the batch (or sample) of the failed element
  skip,  // the element is dropped and counted (with its reason) in PipelineStats; batches stay full
};

struct PipelineOptions {
  // Threads of the iterator's task arena, the driver thread included. 0: all cores.
  int threads = 0;
  // The nice value (Linux: 0-19, higher yields sooner) each of those threads raises its own to before it
  // works for the pipeline, so that the consumer's own threads (a training loop at nice 0: PyTorch's
  // Python and autograd threads launching kernels, a CPU trainer's) get a core first when both want one;
  // the pipeline still takes every core they leave idle. With 10, PyTorch's eager ResNet-18 loop fed by 16
  // threads on 16 cores went from 87-88 % to 95-97 % of its rate on data already on the GPU
  // (bench/results/2026-11-27-h100-run5-worker-nice-final/). 0: the process's priority. An unprivileged
  // process cannot lower a thread's nice value again, so a oneTBB worker (a pool the process shares) keeps
  // the raised value when it later works for other arenas of the process.
  int worker_nice = 10;
  // true: batches and samples come in the order the chain defines, identical at any thread count.
  // false: samples are delivered as they finish, and batches are filled and delivered as they
  // complete, which avoids waiting on a slow element; the set of elements is unchanged (an error
  // then arrives when its element finishes). With one thread, order is kept anyway.
  bool deterministic = true;
  OnError on_error = OnError::fail;
  // Base of every element's seed: sample_seed(seed, epoch, index).
  std::uint64_t seed = 0;
  // Elements being processed at once (oneTBB's token limit); 0: 8 x threads. Bounds the memory of the
  // elements in flight (each keeps its sample's bytes and scratch images).
  std::size_t max_in_flight = 0;
  // When set, every stage of every element is recorded on the track of the arena slot (worker thread)
  // that ran it, the consumer's waits on a "consumer" track and the number of ready items as a counter.
  std::shared_ptr<TraceRecorder> trace = nullptr;
  // Batches the consumer may keep alive while it asks for the next one (a device feeder that keeps
  // two in flight sets 2). The pool has room for them on top of the prefetched and in-flight batches;
  // a consumer that keeps more makes next() throw Error instead of waiting forever for a buffer.
  std::size_t held_batches = 1;
  // The read stage refuses a file larger than this (IoError in the "read" stage, skipped and counted
  // under on_error = skip) before reading any of it: a stray disk image or video named .jpg must not
  // take memory it would keep (an element's byte buffer keeps its capacity). 0: no limit. Training photos
  // are far smaller; raise it for huge scans (decode's 100 M pixel limit admits high-quality JPEGs of a
  // few hundred MB).
  std::size_t max_file_bytes = std::size_t{256} << 20;
  // Where batch buffers live; null: ordinary pageable memory. A GPU consumer gives page-locked memory
  // (conveyor/cuda/pinned_memory.h) so that its copies are asynchronous; DeviceFeeder::feed does that.
  std::shared_ptr<HostMemoryResource> host_memory = nullptr;

  // ---- watchdog ----
  // An element that stays in one stage longer than this (a stuck network read, a pathological file) is
  // reported once per stage: its stage, path, time in the stage and worker thread, in
  // PipelineStats::stall_reports, as an instant on the trace's "watchdog" track and through on_stall.
  // 0: no watchdog thread.
  std::chrono::milliseconds stall_limit{0};
  // Called on the watchdog's own thread for every report; keep it quick. Null: none.
  std::function<void(const StallReport&)> on_stall = nullptr;
  // Under on_error = skip, a reported element is also given up: counted as skipped (reason "stalled"), its
  // batch is completed without it, and what its stage does when it finally returns is thrown away (its
  // thread stays busy until then, and the pipeline runs with one element fewer in flight meanwhile). So
  // that such an op can never write into a batch that has been delivered, ops write into the element's
  // own scratch images and the pipeline copies the result into the slot (one copy more per element).
  bool abandon_stalled = false;

  // ---- memory ----
  // Bytes the decodes running at once may reserve (ops/image: libjpeg's whole-image coefficient buffers
  // of progressive and multi-scan files, plus the decoded pixels, estimated from the header before
  // anything is allocated). A decode that would go over waits, in arrival order, until others finish; an
  // image larger than the whole budget decodes alone. Bounds peak memory under hostile input (huge
  // progressive JPEGs) at any thread count. 0: no budget.
  std::size_t decode_memory_budget = std::size_t{512} << 20;

  // ---- deferral ----
  // Lets the chain's last map leave samples' pixels to a stage after batching, as `defer` decides sample by
  // sample (conveyor/defer.h); null: every sample's pixels are made here. DeviceFeeder::feed sets it when
  // the feeder decodes on the GPU. A deferred sample's encoded bytes travel with its batch: each pool buffer
  // keeps up to batch-size byte buffers, as large as the largest file deferred into that slot.
  std::shared_ptr<DeferPolicy> defer = nullptr;
  // The CPUs (Linux CPU numbers) the threads that work for this pipeline run on: each one sets its own
  // affinity to them before a stage (a oneTBB worker that also works for another arena of the process sets
  // that arena's when it moves there). Empty: wherever the process may run. With threads = 0 the pipeline
  // takes one thread per CPU given. For several pipelines on one host (two ranks, or one process feeding
  // two GPUs), each gets its own cores instead of all competing for every core.
  std::vector<int> cpus{};

  // ---- fields (conveyor/fields.h) ----
  // What the geometric ops do to masks and boxes: the mask's fill for made-up pixels, which boxes drop.
  FieldOptions fields{};
};

// The `part`-th of `parts` contiguous, near-equal shares of the CPUs the calling thread may run on, for
// PipelineOptions::cpus: each of `parts` pipelines of one host gets cores of its own, e.g.
// cpu_share(ranks.local_rank, ranks.local_world_size) under a launcher. With fewer CPUs than parts, part p
// gets the p-th CPU (modulo their number) alone. Throws InvalidArgument unless 0 <= part < parts.
std::vector<int> cpu_share(int part, int parts);

// What with_options changes: each field that is set replaces that option, every field left empty keeps
// what the chain had (PipelineOptions says what each one means). So settings made in two places agree:
//   files.with_options({.threads = 16}).with_options({.seed = 7})   // threads 16 and seed 7
// (A with_options that replaced the whole struct would silently reset the threads to 0 here.)
// all(options) sets every field, for code that holds a whole PipelineOptions.
struct PipelineOptionChanges {
  std::optional<int> threads = std::nullopt;
  std::optional<int> worker_nice = std::nullopt;
  std::optional<bool> deterministic = std::nullopt;
  std::optional<OnError> on_error = std::nullopt;
  std::optional<std::uint64_t> seed = std::nullopt;
  std::optional<std::size_t> max_in_flight = std::nullopt;
  std::optional<std::shared_ptr<TraceRecorder>> trace = std::nullopt;
  std::optional<std::size_t> held_batches = std::nullopt;
  std::optional<std::size_t> max_file_bytes = std::nullopt;
  std::optional<std::shared_ptr<HostMemoryResource>> host_memory = std::nullopt;
  std::optional<std::chrono::milliseconds> stall_limit = std::nullopt;
  std::optional<std::function<void(const StallReport&)>> on_stall = std::nullopt;
  std::optional<bool> abandon_stalled = std::nullopt;
  std::optional<std::size_t> decode_memory_budget = std::nullopt;
  std::optional<std::shared_ptr<DeferPolicy>> defer = std::nullopt;
  std::optional<std::vector<int>> cpus = std::nullopt;
  std::optional<FieldOptions> fields = std::nullopt;

  static PipelineOptionChanges all(const PipelineOptions& options);
  // `options` with the set fields replaced.
  PipelineOptions applied_to(PipelineOptions options) const;
};

class BatchSource;

namespace detail {
struct DatasetNode;
struct PipelinePlan;
class Pipeline;
class SourcedBatches;
}  // namespace detail

// An owning iterator: begin() starts the pipeline, the destructor stops it (cancels the work, wakes
// every wait, joins the driver thread; in-flight elements stop at their next stage boundary, so it
// returns once the ops running at that moment finish). Move-only. Not for concurrent use from several
// threads, except stats(). Use it in a range-for, or call next() to take ownership of each item.
// begin() also turns OpenCV's own thread pool off (cv::setNumThreads(0)) so that ops calling OpenCV do
// not oversubscribe the arena's cores; that setting is process-wide in OpenCV.
template <class Item>
class Iterator {
 public:
  using value_type = Item;
  using difference_type = std::ptrdiff_t;

  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;
  ~Iterator();

  // The next batch or sample; std::nullopt at the end. Blocks until one is ready. Throws PipelineError
  // (path, stage, reason) at a failed element when on_error = fail; after that the iterator is at its
  // end. When operator* or == has already fetched an item, next() hands over that one.
  std::optional<Item> next();

  // Counts so far; callable at any time.
  PipelineStats stats() const;
  // Where this iterator stands after the last item it handed out (before the first: where it started),
  // to start another one there (Dataset::begin(state)). O(1). Throws InvalidArgument when the pipeline
  // delivers out of order (deterministic = false with several threads): there is no single position then.
  IteratorState state() const;

  // Stops the pipeline, from any thread: a next() waiting on another thread returns soon (with a batch
  // that was ready, or std::nullopt), and so do later calls once the ready ones are taken.
  void cancel() noexcept;

  // Range-for support. The item stays valid until the next increment.
  const Item& operator*() const;
  const Item* operator->() const { return &**this; }
  Iterator& operator++();
  void operator++(int) { ++*this; }
  friend bool operator==(const Iterator& it, std::default_sentinel_t) { return it.at_end(); }

 private:
  friend class Dataset;
  friend class BatchedDataset;
  explicit Iterator(std::unique_ptr<detail::Pipeline> pipeline);
  explicit Iterator(std::unique_ptr<detail::SourcedBatches> sourced);
  bool at_end() const;
  void fetch() const;
  std::optional<Item> pull() const;

  std::unique_ptr<detail::Pipeline> pipeline_;
  std::unique_ptr<detail::SourcedBatches> sourced_;  // batches of a BatchSource (Iterator<Batch> only)
  mutable std::optional<Item> current_;
  mutable bool fetched_ = false;
};

using BatchIterator = Iterator<Batch>;
using SampleIterator = Iterator<Sample>;
extern template class Iterator<Batch>;
extern template class Iterator<Sample>;

class BatchedDataset;

class Dataset {
 public:
  // ---- sources ----
  // These files, with these labels (one per file; empty: every label is -1).
  static Dataset files(const std::vector<std::string>& paths, std::vector<std::int64_t> labels = {});
  // An ImageFolder tree: every sub-folder of `root` is a class (sorted by name, labels 0..K-1); its
  // regular files named *.jpg or *.jpeg (any case), at any depth, are the class's images, in sorted
  // order. Symbolic links to directories are not followed (no loops; a linked class folder is not a
  // class), links to regular files are; unreadable folders are skipped.
  // Throws IoError when root cannot be listed, InvalidArgument when it holds no image.
  static Dataset image_folder(const std::filesystem::path& root);
  // A text file of "<path> <label>" lines; paths are relative to `root` (default: the list file's
  // folder) unless absolute, and may contain spaces (the label is the last field). Blank lines and lines
  // starting with '#' are ignored. Throws IoError when the file cannot be read, InvalidArgument naming
  // the line number of a malformed line.
  static Dataset list_file(const std::filesystem::path& list, const std::filesystem::path& root = {});
  // Encoded images held in memory; Sample::path is "<memory:N>".
  static Dataset memory(std::vector<std::vector<std::uint8_t>> buffers,
                        std::vector<std::int64_t> labels = {});
  // WebDataset-style tar shards, local paths, http(s):// URLs or s3://bucket/key objects (see
  // expand_shard_pattern for "{a..b}" names; "s3://bucket/prefix/" stands for the shards listed under it;
  // S3Options and ShardCacheOptions in conveyor/shards.h): a sample is the run of consecutive members
  // sharing a key ("img_7.jpg" + "img_7.cls"), its image the bytes and its .cls member the label (-1
  // without one; TarShardOptions says which extensions). Shards are
  // streamed, never held whole: parallel_shards threads read ahead of the pipeline, and their samples
  // come interleaved, one from each shard being read in turn. Every epoch the shards are shuffled (seeded
  // from options.seed and the epoch), and an element's index is the sample's position in that epoch's
  // order of all shards, so its seed, and so its pixels, are the same at any thread count and any world
  // size. options.ranks splits each epoch: each rank reads a contiguous,
  // balanced range of it (whole shards but at most one at each end), evened out by options.remainder;
  // shuffle() after this shuffles within the rank's range and keeps the indices. To split across ranks
  // the shards' sample counts are needed: they come from tar_shard_index or are counted once here
  // (local files: headers only); URLs without an index are refused then. Sample::path is
  // "<shard>#<member>". A sample that breaks the format (no image, a bad label, a duplicated key or
  // member, an oversized image) and a shard that breaks off (truncated, unreadable, an HTTP failure after
  // the retries; each sample it still owed) fail in the "read" stage with the shard, the member and the
  // byte offset, or are counted by kind under on_error = skip. Throws InvalidArgument for bad options.
  // With options.random_access, local shards are not streamed but located once and read at random, and
  // the dataset is a table like image_folder's (see TarShardOptions::random_access).
  static Dataset tar_shards(std::vector<std::string> shards, const TarShardOptions& options);
  static Dataset tar_shards(std::vector<std::string> shards);  // default TarShardOptions
  // The shards listed by a shard index (WebDataset's wids JSON, which make_shards writes: a "shardlist"
  // of {"url", "nsamples"}; relative urls are relative to the index), a path, a URL or an s3:// object.
  static Dataset tar_shard_index(const std::string& index, const TarShardOptions& options);
  static Dataset tar_shard_index(const std::string& index);
  // Semantic segmentation: ROOT/images/NAME.jpg (.jpeg, .png) with ROOT/masks/NAME.png, matched by stem
  // (see SegmentationFolderOptions), in sorted order; each sample's encoded_mask is its mask PNG (class
  // ids; the decoding ops decode it with the image). An image without its mask or a mask without its image
  // is InvalidArgument naming both paths, or left out and counted (Unpaired::skip). Throws IoError when a
  // folder cannot be listed, InvalidArgument when no pair is found.
  static Dataset segmentation_folder(const std::filesystem::path& root,
                                     const SegmentationFolderOptions& options = {});
  // Object detection from a COCO "instances" JSON (parsed once, here): its images under `images` (each
  // image's file_name relative to it), each sample's boxes from its annotations' bbox [x, y, w, h] as
  // (x, y, x + w, y + h) with the category as class (see CocoOptions: crowd boxes, class ids); degenerate
  // boxes (w or h <= 0) are left out. The label is -1. Throws IoError when the file cannot be read,
  // InvalidArgument naming what is wrong with the JSON (with the annotation or image id).
  static Dataset coco_detection(const std::filesystem::path& annotations, const std::filesystem::path& images,
                                const CocoOptions& options = {});
  // A user's own source (conveyor/source.h): every method of the chain works on it as on the built-in ones.
  static Dataset from_source(std::shared_ptr<const SampleSource> source);

  // ---- which elements, in what order ----
  // The whole epoch in a random order, a new one every epoch: a keyed pseudo-random permutation of the
  // positions (a Feistel network; src/pipeline/epoch_permutation.h), so that position p of the epoch is
  // found without the ones before it and an iterator's state restores in O(1) (conveyor/iterator_state.h).
  // The seed derives from the pipeline seed (PipelineOptions::seed) unless given: shuffle(whole_epoch, seed).
  // Needs random access to the stream before it: the source, shard, skip, take and a finite repeat
  // have it; a buffered shuffle or repeat() forever before it is refused (InvalidArgument).
  Dataset shuffle() const;
  // A buffered shuffle (tf.data's): keeps `buffer_size` elements and emits a random one of them each time.
  // Reshuffled every epoch (the generator is seeded from the seed and the epoch). buffer_size >= the
  // dataset's size gives a uniform permutation. Without a seed, it derives from the pipeline seed (and the
  // shuffle's position in the chain). An iterator's state restores by replaying the draws since the epoch
  // began (no element is read or decoded again). buffer_size == whole_epoch is shuffle() above.
  Dataset shuffle(std::size_t buffer_size) const;
  Dataset shuffle(std::size_t buffer_size, std::uint64_t seed) const;
  static constexpr std::size_t whole_epoch = static_cast<std::size_t>(-1);
  // The stream so far, `count` times (epochs 0..count-1); repeat() repeats forever.
  Dataset repeat(std::uint64_t count) const;
  Dataset repeat() const;
  // Only the elements whose index % num_shards == index: the shards of one seed partition every epoch.
  Dataset shard(std::size_t num_shards, std::size_t index) const;
  // Element q of each epoch's stream goes to shard q % num_shards (q counts the elements this call sees
  // in the epoch: the index when it follows a shuffle or the source), and `remainder` evens the shards
  // out (see ShardRemainder). A padding element keeps the index and seed of the element it repeats.
  Dataset shard(std::size_t num_shards, std::size_t index, ShardRemainder remainder) const;
  // This rank's share of every epoch: shard(ranks.world_size, ranks.rank, remainder). Put it after the
  // shuffle, so that the ranks split one global order and every element keeps its index and seed at any
  // world size.
  Dataset shard(const Ranks& ranks, ShardRemainder remainder = ShardRemainder::pad) const;
  Dataset skip(std::uint64_t count) const;
  Dataset take(std::uint64_t count) const;
  // Only positions [first, first + count) of epoch `epoch` of the stream so far (fewer where the epoch is
  // shorter), then the end: one part of one epoch, made anywhere with the indices, seeds and so the pixels
  // an uninterrupted run gives those elements. A data service's worker makes its splits this way
  // (conveyor/service/). Each element is found by its position, nothing before the range is produced: the
  // stream before it needs random access (the source, shuffle(), shard, skip and take; shard with pad or
  // drop before any repeat). No ordering method may follow it. Throws InvalidArgument otherwise.
  Dataset epoch_range(std::uint64_t epoch, std::uint64_t first, std::uint64_t count) const;

  // ---- per element ----
  // Runs op.apply on every element; op.name names the stage in errors, stats and traces.
  Dataset map(SampleOp op) const;
  Dataset map(std::string name, std::function<void(Sample&)> fn) const;
  Dataset map(std::function<void(Sample&)> fn) const;  // named "map"
  // Keeps the elements for which `keep` returns true.
  Dataset filter(std::function<bool(const Sample&)> keep) const;  // named "filter"
  Dataset filter(std::string name, std::function<bool(const Sample&)> keep) const;

  // ---- reading the chain back ----
  // A map of the chain as it was given, and its position among the chain's maps and filters (the position
  // its draws derive from: op_stream(kind, position), conveyor/random.h).
  struct PlacedMap {
    SampleOp op;
    std::size_t position;
  };
  // The chain's last map, when the last call that acts on elements was map() (with_options and prefetch
  // after it do not count); std::nullopt when it was a filter or an ordering method, or there is none.
  // With without_last_map(), code that runs an op elsewhere (conveyor::place_pixel_ops moves a trailing
  // flip and distort onto the GPU) takes it off a chain that is already built.
  std::optional<PlacedMap> last_map() const;
  // The chain without its last map (InvalidArgument when last_map() has none); the options and the prefetch
  // depth in effect stay, and every other step keeps its position, so its draws do not change.
  Dataset without_last_map() const;

  // ---- execution ----
  // Sets the options given in `changes` for every iterator made from the result; the others keep the
  // values the chain had (defaults, or an earlier with_options). Throws InvalidArgument on a bad value.
  Dataset with_options(const PipelineOptionChanges& changes) const;
  // Samples kept ready ahead of the consumer when iterating samples (default 16).
  Dataset prefetch(std::size_t samples) const;
  // Groups samples into batches of fixed-size images written straight into pooled (pinned when a GPU is
  // present) buffers: an op that writes Sample::output(shape) at the batch's shape writes into the
  // sample's slot, and anything else is copied there on the worker. The sample shape is given, or
  // taken from the first element that makes it through the maps (run once more for that). An element
  // of another shape fails in the "batch" stage. The last, smaller batch is kept unless drop_remainder.
  BatchedDataset batch(std::size_t batch_size, bool drop_remainder = false) const;
  BatchedDataset batch(std::size_t batch_size, ImageShape sample_shape, bool drop_remainder = false) const;
  // With the layout of the samples' other fields (masks, boxes, multi-hot labels; see BatchOptions).
  BatchedDataset batch(std::size_t batch_size, const BatchOptions& options) const;

  // Iterating a Dataset yields Samples, owning copies of every element's identity, bytes and pixels:
  // for tests and for variable-size data.
  SampleIterator begin() const;
  // An iterator that continues where the one that gave `state` stood (Iterator::state()): the same samples
  // an uninterrupted iterator would deliver next. Throws InvalidArgument when the state belongs to another
  // dataset (other source size, ordering methods or pipeline seed), naming the difference.
  SampleIterator begin(const IteratorState& state) const;
  std::default_sentinel_t end() const noexcept { return {}; }

  // Elements in the source (before shuffle, repeat, shard, ...); for tar shards the samples of all
  // shards when their counts are known, else 0.
  std::size_t source_size() const noexcept;
  // Element i of the source: its path ("<memory:i>" for in-memory sources) and label; i < source_size().
  // Not for tar shards (InvalidArgument): their samples are only known as they stream by.
  std::string source_path(std::size_t i) const;
  std::int64_t source_label(std::size_t i) const;
  // The class names of an image_folder source, in label order; empty for other sources.
  const std::vector<std::string>& class_names() const noexcept;
  // The fields the source's elements carry besides the image and label (conveyor/fields.h).
  const FieldSet& fields() const noexcept;
  const PipelineOptions& options() const noexcept;

 private:
  friend class BatchedDataset;
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node) : node_(std::move(node)) {}
  // No elements: what a BatchedDataset from a BatchSource keeps its options in.
  static Dataset nothing();
  // A new node after this one, inheriting its source, options and prefetch depth.
  std::shared_ptr<detail::DatasetNode> child() const;
  void require_no_filter(const char* what) const;
  Dataset shuffle_with(std::size_t buffer_size, std::optional<std::uint64_t> seed) const;

  std::shared_ptr<const detail::DatasetNode> node_;
};

class BatchedDataset {
 public:
  // Batches made elsewhere (conveyor/batch_source.h): another process or host, such as a data service's
  // workers (conveyor/service/). Its batch size, shape and fields are the source's; prefetch, with_options
  // and begin(state) apply as to any chain, samples() is an empty chain that carries the options, and
  // with_samples throws InvalidArgument. Throws InvalidArgument for a null source.
  static BatchedDataset from_source(std::shared_ptr<const BatchSource> source);

  // Batches kept ready ahead of the consumer (default 2). The pipeline pauses while this many are ready;
  // the pool holds prefetch + in-flight + held_batches buffers, so memory is bounded by configuration.
  BatchedDataset prefetch(std::size_t batches) const;
  BatchedDataset with_options(const PipelineOptionChanges& changes) const;
  // The same batching (size, shape, remainder, prefetch) over other samples, e.g. samples() with a map
  // taken off (Dataset::without_last_map).
  BatchedDataset with_samples(Dataset samples) const;

  BatchIterator begin() const;
  // Continues where the iterator that gave `state` stood (see Dataset::begin(state)): the batches an
  // uninterrupted iterator would deliver next, bit for bit, at any thread count; from a combined state
  // (IteratorState::combine) the rest of the epoch split over this dataset's shard count.
  BatchIterator begin(const IteratorState& state) const;
  std::default_sentinel_t end() const noexcept { return {}; }

  std::size_t batch_size() const noexcept { return batch_size_; }
  bool drop_remainder() const noexcept { return options_.drop_remainder; }
  std::size_t prefetch_depth() const noexcept { return prefetch_; }
  // The given sample shape, or nullopt when it is taken from the first element.
  std::optional<ImageShape> sample_shape() const noexcept { return options_.sample_shape; }
  const BatchOptions& batch_options() const noexcept { return options_; }
  const Dataset& samples() const noexcept { return samples_; }
  const std::vector<std::string>& class_names() const noexcept { return samples_.class_names(); }
  const PipelineOptions& options() const noexcept { return samples_.options(); }
  // The BatchSource behind from_source(), or null for a chain run here.
  const std::shared_ptr<const BatchSource>& source() const noexcept { return source_; }

 private:
  friend class Dataset;
  BatchedDataset(Dataset samples, std::size_t batch_size, BatchOptions options);
  detail::PipelinePlan plan() const;

  Dataset samples_;
  std::shared_ptr<const BatchSource> source_;
  std::size_t batch_size_;
  BatchOptions options_;
  std::size_t prefetch_ = 2;
};

}  // namespace conveyor
