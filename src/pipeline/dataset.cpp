#include "conveyor/dataset.h"

#include "conveyor/batch_source.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "src/pipeline/dataset_node.h"
#include "src/pipeline/element_order.h"
#include "src/pipeline/pipeline.h"
#include "src/pipeline/sourced_batches.h"
#include "src/pipeline/worker_affinity.h"
#include "src/sources/coco_detection.h"
#include "src/sources/segmentation_folder.h"
#include "src/sources/shard_members.h"
#include "src/sources/shard_set.h"

namespace conveyor {
namespace {

std::shared_ptr<detail::DatasetNode> source_node(std::shared_ptr<const detail::Source> source) {
  auto node = std::make_shared<detail::DatasetNode>();
  node->source = std::move(source);
  return node;
}

std::vector<std::int64_t> checked_labels(std::vector<std::int64_t> labels, std::size_t size,
                                         const char* what) {
  if (labels.empty()) return std::vector<std::int64_t>(size, -1);
  if (labels.size() != size)
    throw InvalidArgument(std::string(what) + ": " + std::to_string(labels.size()) + " labels for " +
                          std::to_string(size) + " elements");
  return labels;
}

// Tar shards streamed, or located and read at random (TarShardOptions::random_access).
std::shared_ptr<const detail::Source> shard_source(detail::ShardSet set) {
  if (set.options.random_access)
    return detail::Source::shard_members(std::make_shared<detail::ShardMembers>(set));
  return detail::Source::shards(std::make_shared<const detail::ShardSet>(std::move(set)));
}

}  // namespace

const char* to_string(ShardRemainder remainder) noexcept {
  switch (remainder) {
    case ShardRemainder::uneven:
      return "uneven";
    case ShardRemainder::pad:
      return "pad";
    case ShardRemainder::drop:
      return "drop";
  }
  return "unknown";
}

namespace detail {

// The kind of a shuffle's Rng stream when its seed derives from the pipeline seed ("SHUFFLE").
constexpr std::uint64_t kShuffleKind = 0x5348'5546'464C'45ull;

PipelinePlan make_plan(const DatasetNode& last) {
  std::vector<const DatasetNode*> chain;
  for (const DatasetNode* node = &last; node != nullptr; node = node->parent.get()) chain.push_back(node);
  PipelinePlan plan;
  plan.source = last.source;
  plan.options = last.options;
  plan.prefetch = last.prefetch;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if ((*it)->order) {
      OrderOp op = *(*it)->order;
      if (auto* shuffle = std::get_if<ShuffleOrder>(&op); shuffle && !shuffle->seed)
        shuffle->seed = combine_seeds(plan.options.seed, op_stream(kShuffleKind, plan.order.size()));
      plan.order.push_back(std::move(op));
    }
    if ((*it)->step) plan.steps.push_back(*(*it)->step);
  }
  for (const OrderOp& op : plan.order)
    if (const auto* shard = std::get_if<ShardOrder>(&op);
        shard && shard->remainder != ShardRemainder::uneven && shard->num_shards > 1)
      plan.even = true;
  if (const std::shared_ptr<const ShardSet>& shards = plan.source->shard_set();
      shards && shards->options.remainder != ShardRemainder::uneven && shards->options.ranks.world_size > 1)
    plan.even = true;
  return plan;
}

}  // namespace detail

// ---- sources ----

Dataset Dataset::files(const std::vector<std::string>& paths, std::vector<std::int64_t> labels) {
  detail::FileListing listing;
  std::size_t bytes = 0;
  for (const std::string& path : paths) bytes += path.size() + 1;
  listing.paths.reserve(paths.size(), bytes);
  for (const std::string& path : paths) {
    if (path.empty()) throw InvalidArgument("Dataset::files: empty path");
    if (path.find('\0') != std::string::npos)  // it would open the file named by the part before the NUL
      throw InvalidArgument("Dataset::files: a path contains a NUL byte");
    listing.paths.add(path);
  }
  listing.labels = checked_labels(std::move(labels), paths.size(), "Dataset::files");
  return Dataset(source_node(detail::Source::files(std::move(listing))));
}

Dataset Dataset::image_folder(const std::filesystem::path& root) {
  return Dataset(source_node(detail::Source::files(detail::list_image_folder(root))));
}

Dataset Dataset::list_file(const std::filesystem::path& list, const std::filesystem::path& root) {
  return Dataset(source_node(detail::Source::files(detail::parse_list_file(list, root))));
}

Dataset Dataset::memory(std::vector<std::vector<std::uint8_t>> buffers, std::vector<std::int64_t> labels) {
  std::vector<std::int64_t> checked = checked_labels(std::move(labels), buffers.size(), "Dataset::memory");
  return Dataset(source_node(detail::Source::memory(std::move(buffers), std::move(checked))));
}

Dataset Dataset::tar_shards(std::vector<std::string> shards, const TarShardOptions& options) {
  std::vector<detail::ShardInfo> infos;
  infos.reserve(shards.size());
  for (std::string& shard : shards) infos.push_back({std::move(shard), std::nullopt});
  return Dataset(source_node(shard_source(detail::make_shard_set(std::move(infos), options))));
}

Dataset Dataset::tar_shards(std::vector<std::string> shards) {
  static const TarShardOptions defaults;
  return tar_shards(std::move(shards), defaults);
}

Dataset Dataset::tar_shard_index(const std::string& index) {
  static const TarShardOptions defaults;
  return tar_shard_index(index, defaults);
}

Dataset Dataset::tar_shard_index(const std::string& index, const TarShardOptions& options) {
  constexpr std::size_t kMaxIndexBytes = std::size_t{64} << 20;
  // The opener that reads the index reads the shards too: one S3 client, one cache, one count of it all.
  auto opener = std::make_shared<detail::ShardOpener>(options);
  opener->prepare({index});
  const std::string text = detail::read_small_file(index, *opener, kMaxIndexBytes);
  return Dataset(source_node(shard_source(
      detail::make_shard_set(detail::parse_shard_index(text, index), options, std::move(opener)))));
}

Dataset Dataset::segmentation_folder(const std::filesystem::path& root,
                                     const SegmentationFolderOptions& options) {
  return from_source(detail::segmentation_folder(root, options));
}

Dataset Dataset::coco_detection(const std::filesystem::path& annotations, const std::filesystem::path& images,
                                const CocoOptions& options) {
  return from_source(detail::coco_detection(annotations, images, options));
}

Dataset Dataset::nothing() { return Dataset(source_node(detail::Source::memory({}, {}))); }

Dataset Dataset::from_source(std::shared_ptr<const SampleSource> source) {
  return Dataset(source_node(detail::Source::custom(std::move(source))));
}

// ---- chaining ----

std::shared_ptr<detail::DatasetNode> Dataset::child() const {
  auto node = std::make_shared<detail::DatasetNode>();
  node->parent = node_;
  node->source = node_->source;
  node->options = node_->options;
  node->prefetch = node_->prefetch;
  node->has_filter = node_->has_filter;
  node->has_range = node_->has_range;
  return node;
}

void Dataset::require_no_filter(const char* what) const {
  if (node_->has_range)
    throw InvalidArgument(std::string("Dataset::") + what +
                          " after epoch_range(): the range is the end of the order; call it before");
  if (node_->has_filter)
    throw InvalidArgument(
        std::string("Dataset::") + what +
        " after filter(): it would act on a stream whose length depends on the filter; call it "
        "before filter()");
}

Dataset Dataset::shuffle() const { return shuffle_with(whole_epoch, std::nullopt); }
Dataset Dataset::shuffle(std::size_t buffer_size) const { return shuffle_with(buffer_size, std::nullopt); }
Dataset Dataset::shuffle(std::size_t buffer_size, std::uint64_t seed) const {
  return shuffle_with(buffer_size, seed);
}

Dataset Dataset::shuffle_with(std::size_t buffer_size, std::optional<std::uint64_t> seed) const {
  require_no_filter("shuffle");
  if (buffer_size == 0) throw InvalidArgument("Dataset::shuffle: buffer_size must be at least 1");
  auto node = child();
  node->order = detail::ShuffleOrder{buffer_size, seed};
  // Builds the order once (cheap: nothing is drawn) so that an impossible chain fails here, where it was
  // written, rather than at begin().
  if (buffer_size == whole_epoch) detail::ElementOrder(*node->source, detail::make_plan(*node).order);
  return Dataset(std::move(node));
}

// Repeating commutes with filtering, so it may follow a filter.
Dataset Dataset::repeat(std::uint64_t count) const {
  if (node_->has_range)
    throw InvalidArgument("Dataset::repeat after epoch_range(): the range is the end of the order");
  auto node = child();
  node->order = detail::RepeatOrder{count};
  return Dataset(std::move(node));
}

Dataset Dataset::repeat() const {
  if (node_->has_range)
    throw InvalidArgument("Dataset::repeat after epoch_range(): the range is the end of the order");
  auto node = child();
  node->order = detail::RepeatOrder{std::nullopt};
  return Dataset(std::move(node));
}

Dataset Dataset::shard(std::size_t num_shards, std::size_t index) const {
  return shard(num_shards, index, ShardRemainder::uneven);
}

Dataset Dataset::shard(std::size_t num_shards, std::size_t index, ShardRemainder remainder) const {
  require_no_filter("shard");
  if (num_shards == 0 || index >= num_shards)
    throw InvalidArgument("Dataset::shard: index " + std::to_string(index) + " is not below num_shards " +
                          std::to_string(num_shards));
  auto node = child();
  node->order = detail::ShardOrder{num_shards, index, remainder};
  return Dataset(std::move(node));
}

Dataset Dataset::shard(const Ranks& ranks, ShardRemainder remainder) const {
  if (ranks.world_size < 1 || ranks.rank < 0 || ranks.rank >= ranks.world_size)
    throw InvalidArgument("Dataset::shard: rank " + std::to_string(ranks.rank) + " of world size " +
                          std::to_string(ranks.world_size));
  return shard(static_cast<std::size_t>(ranks.world_size), static_cast<std::size_t>(ranks.rank), remainder);
}

Dataset Dataset::skip(std::uint64_t count) const {
  require_no_filter("skip");
  auto node = child();
  node->order = detail::SkipOrder{count};
  return Dataset(std::move(node));
}

Dataset Dataset::take(std::uint64_t count) const {
  require_no_filter("take");
  auto node = child();
  node->order = detail::TakeOrder{count};
  return Dataset(std::move(node));
}

Dataset Dataset::epoch_range(std::uint64_t epoch, std::uint64_t first, std::uint64_t count) const {
  require_no_filter("epoch_range");
  auto node = child();
  node->order = detail::RangeOrder{epoch, first, count};
  node->has_range = true;
  // Built once here (nothing is drawn) so that a chain without random access fails where it was written.
  detail::ElementOrder(*node->source, detail::make_plan(*node).order);
  return Dataset(std::move(node));
}

Dataset Dataset::map(SampleOp op) const {
  if (!op.apply) throw InvalidArgument("Dataset::map: the op '" + op.name + "' has no function");
  auto node = child();
  node->step = detail::Step{op.name.empty() ? std::string("map") : std::move(op.name),
                            std::move(op.apply),
                            {},
                            std::move(op.spec),
                            std::move(op.gpu_twin)};
  return Dataset(std::move(node));
}

Dataset Dataset::map(std::string name, std::function<void(Sample&)> fn) const {
  return map(SampleOp{std::move(name), std::move(fn)});
}

Dataset Dataset::map(std::function<void(Sample&)> fn) const { return map(SampleOp{"map", std::move(fn)}); }

Dataset Dataset::filter(std::function<bool(const Sample&)> keep) const {
  return filter("filter", std::move(keep));
}

Dataset Dataset::filter(std::string name, std::function<bool(const Sample&)> keep) const {
  if (!keep) throw InvalidArgument("Dataset::filter: no predicate");
  auto node = child();
  node->step = detail::Step{name.empty() ? std::string("filter") : std::move(name), {}, std::move(keep)};
  node->has_filter = true;
  return Dataset(std::move(node));
}

PipelineOptionChanges PipelineOptionChanges::all(const PipelineOptions& o) {
  return {.threads = o.threads,
          .worker_nice = o.worker_nice,
          .deterministic = o.deterministic,
          .on_error = o.on_error,
          .seed = o.seed,
          .max_in_flight = o.max_in_flight,
          .trace = o.trace,
          .held_batches = o.held_batches,
          .max_file_bytes = o.max_file_bytes,
          .host_memory = o.host_memory,
          .stall_limit = o.stall_limit,
          .on_stall = o.on_stall,
          .abandon_stalled = o.abandon_stalled,
          .decode_memory_budget = o.decode_memory_budget,
          .defer = o.defer,
          .cpus = o.cpus,
          .fields = o.fields};
}

PipelineOptions PipelineOptionChanges::applied_to(PipelineOptions o) const {
  if (threads) o.threads = *threads;
  if (worker_nice) o.worker_nice = *worker_nice;
  if (deterministic) o.deterministic = *deterministic;
  if (on_error) o.on_error = *on_error;
  if (seed) o.seed = *seed;
  if (max_in_flight) o.max_in_flight = *max_in_flight;
  if (trace) o.trace = *trace;
  if (held_batches) o.held_batches = *held_batches;
  if (max_file_bytes) o.max_file_bytes = *max_file_bytes;
  if (host_memory) o.host_memory = *host_memory;
  if (stall_limit) o.stall_limit = *stall_limit;
  if (on_stall) o.on_stall = *on_stall;
  if (abandon_stalled) o.abandon_stalled = *abandon_stalled;
  if (decode_memory_budget) o.decode_memory_budget = *decode_memory_budget;
  if (defer) o.defer = *defer;
  if (cpus) o.cpus = *cpus;
  if (fields) o.fields = *fields;
  return o;
}

namespace {

// The node of the chain's last step or ordering method at or before `node` (with_options and prefetch
// nodes carry neither), or the source node.
const detail::DatasetNode* last_acting(const detail::DatasetNode* node) {
  while (node->parent && !node->step && !node->order) node = node->parent.get();
  return node;
}

}  // namespace

std::optional<Dataset::PlacedMap> Dataset::last_map() const {
  const detail::DatasetNode* node = last_acting(node_.get());
  if (!node->step || !node->step->map) return std::nullopt;
  std::size_t position = 0;  // the steps before it
  for (const detail::DatasetNode* up = node->parent.get(); up != nullptr; up = up->parent.get())
    if (up->step) ++position;
  const detail::Step& step = *node->step;
  return PlacedMap{SampleOp{step.name, step.map, step.spec, step.gpu_twin}, position};
}

Dataset Dataset::without_last_map() const {
  const detail::DatasetNode* map = last_acting(node_.get());
  if (!map->step || !map->step->map)
    throw InvalidArgument("Dataset::without_last_map: the chain's last call is not a map");
  // What is in effect at the end of the chain stays; a map changes neither the source nor has_filter.
  auto node = std::make_shared<detail::DatasetNode>(*node_);
  node->parent = map->parent;
  node->order.reset();
  node->step.reset();
  return Dataset(std::move(node));
}

Dataset Dataset::with_options(const PipelineOptionChanges& changes) const {
  using detail::check_cpus;
  PipelineOptions options = changes.applied_to(node_->options);
  if (options.threads < 0) throw InvalidArgument("PipelineOptions: threads must be >= 0");
  if (options.worker_nice < 0 || options.worker_nice > 19)
    throw InvalidArgument("PipelineOptions: worker_nice must be 0-19 (got " +
                          std::to_string(options.worker_nice) +
                          "); an unprivileged process cannot raise its threads' priority");
  if (options.stall_limit.count() < 0) throw InvalidArgument("PipelineOptions: stall_limit must be >= 0");
  check_cpus(options.cpus, "PipelineOptions::cpus");
  if (!(options.fields.min_box_area >= 0) || !(options.fields.min_box_visibility >= 0) ||
      !(options.fields.min_box_visibility <= 1))
    throw InvalidArgument(
        "PipelineOptions: fields.min_box_area must be >= 0 and fields.min_box_visibility in [0, 1]");
  auto node = child();
  node->options = std::move(options);
  return Dataset(std::move(node));
}

Dataset Dataset::prefetch(std::size_t samples) const {
  if (samples == 0) throw InvalidArgument("Dataset::prefetch: at least 1");
  auto node = child();
  node->prefetch = samples;
  return Dataset(std::move(node));
}

BatchedDataset Dataset::batch(std::size_t batch_size, bool drop_remainder) const {
  return BatchedDataset(*this, batch_size, BatchOptions{.drop_remainder = drop_remainder});
}

BatchedDataset Dataset::batch(std::size_t batch_size, ImageShape sample_shape, bool drop_remainder) const {
  return batch(batch_size, BatchOptions{.sample_shape = sample_shape, .drop_remainder = drop_remainder});
}

BatchedDataset Dataset::batch(std::size_t batch_size, const BatchOptions& options) const {
  if (options.sample_shape && options.sample_shape->empty())
    throw InvalidArgument("Dataset::batch: empty sample shape");
  return BatchedDataset(*this, batch_size, options);
}

SampleIterator Dataset::begin() const {
  return SampleIterator(std::make_unique<detail::Pipeline>(detail::make_plan(*node_)));
}

SampleIterator Dataset::begin(const IteratorState& state) const {
  return SampleIterator(std::make_unique<detail::Pipeline>(detail::make_plan(*node_), state));
}

std::size_t Dataset::source_size() const noexcept { return node_->source->size(); }
std::string Dataset::source_path(std::size_t i) const {
  if (node_->source->streamed()) throw InvalidArgument("Dataset::source_path: tar shards are streamed");
  if (i >= source_size()) throw InvalidArgument("Dataset::source_path: index out of range");
  if (const auto& custom = node_->source->sample_source()) return custom->path(i);
  return std::string(node_->source->path(i));
}
std::int64_t Dataset::source_label(std::size_t i) const {
  if (node_->source->streamed()) throw InvalidArgument("Dataset::source_label: tar shards are streamed");
  if (i >= source_size()) throw InvalidArgument("Dataset::source_label: index out of range");
  if (const auto& custom = node_->source->sample_source()) return custom->label(i);
  return node_->source->label(i);
}
const FieldSet& Dataset::fields() const noexcept { return node_->source->fields(); }
const std::vector<std::string>& Dataset::class_names() const noexcept { return node_->source->class_names(); }
const PipelineOptions& Dataset::options() const noexcept { return node_->options; }

// ---- batches ----

BatchedDataset::BatchedDataset(Dataset samples, std::size_t batch_size, BatchOptions options)
    : samples_(std::move(samples)), batch_size_(batch_size), options_(options) {
  if (batch_size == 0) throw InvalidArgument("Dataset::batch: batch_size must be at least 1");
}

BatchedDataset BatchedDataset::prefetch(std::size_t batches) const {
  if (batches == 0) throw InvalidArgument("BatchedDataset::prefetch: at least 1");
  BatchedDataset result = *this;
  result.prefetch_ = batches;
  return result;
}

BatchedDataset BatchedDataset::with_options(const PipelineOptionChanges& changes) const {
  BatchedDataset result = *this;
  result.samples_ = samples_.with_options(changes);
  return result;
}

BatchedDataset BatchedDataset::from_source(std::shared_ptr<const BatchSource> source) {
  if (!source) throw InvalidArgument("BatchedDataset::from_source: no source");
  const BatchSourceLayout layout = source->layout();
  BatchOptions options{.sample_shape = layout.sample_shape,
                       .mask_type = layout.masks.value_or(MaskType::uint8),
                       .max_boxes = layout.max_boxes,
                       .num_classes = layout.num_classes};
  BatchedDataset result(Dataset::nothing(), layout.batch_size, options);
  result.source_ = std::move(source);
  return result;
}

BatchedDataset BatchedDataset::with_samples(Dataset samples) const {
  if (source_) throw InvalidArgument("BatchedDataset::with_samples: the batches come from a BatchSource");
  BatchedDataset result = *this;
  result.samples_ = std::move(samples);
  return result;
}

detail::PipelinePlan BatchedDataset::plan() const {
  detail::PipelinePlan plan = detail::make_plan(*samples_.node_);
  plan.batched = true;
  plan.batch_size = batch_size_;
  plan.shape = options_.sample_shape;
  plan.drop_remainder = options_.drop_remainder;
  plan.batch_options = options_;
  plan.prefetch = prefetch_;
  return plan;
}

BatchIterator BatchedDataset::begin() const { return begin(IteratorState{}); }

BatchIterator BatchedDataset::begin(const IteratorState& state) const {
  if (source_)
    return BatchIterator(std::make_unique<detail::SourcedBatches>(source_, options(), prefetch_, state));
  return BatchIterator(std::make_unique<detail::Pipeline>(plan(), state));
}

}  // namespace conveyor
