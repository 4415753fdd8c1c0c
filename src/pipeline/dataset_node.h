// The immutable nodes behind a Dataset, and the plan an iterator compiles from them.
#pragma once

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/image.h"
#include "conveyor/sample.h"
#include "src/sources/source.h"

namespace conveyor::detail {

// The methods that decide which elements run, in what order.
struct ShuffleOrder {
  std::size_t buffer_size;            // Dataset::whole_epoch: the random-access whole-epoch permutation
  std::optional<std::uint64_t> seed;  // nullopt: derived from the pipeline seed by make_plan
};
struct RepeatOrder {
  std::optional<std::uint64_t> count;  // nullopt: forever
};
struct ShardOrder {
  std::size_t num_shards;
  std::size_t index;
  ShardRemainder remainder = ShardRemainder::uneven;
};
struct SkipOrder {
  std::uint64_t count;
};
struct TakeOrder {
  std::uint64_t count;
};
// Positions [first, first + count) of one epoch of the stream so far, then the end (Dataset::epoch_range).
struct RangeOrder {
  std::uint64_t epoch;
  std::uint64_t first;
  std::uint64_t count;
};
using OrderOp = std::variant<ShuffleOrder, RepeatOrder, ShardOrder, SkipOrder, TakeOrder, RangeOrder>;

// A map (map is set) or a filter (keep is set), run on each element.
struct Step {
  std::string name;
  std::function<void(Sample&)> map;
  std::function<bool(const Sample&)> keep;
  std::any spec = {};  // a map's SampleOp::spec and gpu_twin, for Dataset::last_map
  std::string gpu_twin = {};
};

// One call in the chain. Each node also carries what is in effect after it (source, options, prefetch),
// so that the Dataset's accessors need not walk the chain.
struct DatasetNode {
  std::shared_ptr<const DatasetNode> parent;
  std::optional<OrderOp> order;
  std::optional<Step> step;
  std::shared_ptr<const Source> source;
  PipelineOptions options;
  std::size_t prefetch = 16;
  bool has_filter = false;
  bool has_range = false;  // an epoch_range: no ordering method may follow it
};

// Everything an iterator needs, in execution order.
struct PipelinePlan {
  std::shared_ptr<const Source> source;
  std::vector<OrderOp> order;
  std::vector<Step> steps;
  PipelineOptions options;
  std::size_t prefetch = 16;  // samples, or batches when batched
  bool batched = false;
  std::size_t batch_size = 0;
  std::optional<ImageShape> shape;
  bool drop_remainder = false;
  // The layout of the other fields (mask type, max boxes, classes: what the field kinds read).
  BatchOptions batch_options;
  // A split across ranks evens out the epochs (ShardRemainder pad or drop): batches then keep a failed or
  // filtered element's slot as padding instead of closing the gap, so that every rank's count holds.
  bool even = false;
};

// Walks the chain from the source to `last`. Every shuffle's seed is resolved: a shuffle without one gets
// combine_seeds(options.seed, op_stream(shuffle kind, its position among the ordering methods)).
PipelinePlan make_plan(const DatasetNode& last);

}  // namespace conveyor::detail
