#include "src/pipeline/sourced_batches.h"

#include <algorithm>
#include <utility>

#include "conveyor/error.h"
#include "src/pipeline/iterator_state_data.h"

namespace conveyor::detail {
namespace {

// The position a state holds for `description` and `seed`, or InvalidArgument naming the first difference.
BatchStreamPosition position_in(const IteratorStateData* state, const std::vector<std::string>& description,
                                std::uint64_t seed) {
  if (state == nullptr) return {};
  if (state->seed != seed)
    throw InvalidArgument("iterator state saved with pipeline seed " + std::to_string(state->seed) +
                          ", this dataset's seed is " + std::to_string(seed));
  for (std::size_t i = 0; i < std::max(state->order.size(), description.size()); ++i) {
    const std::string saved = i < state->order.size() ? state->order[i] : "(nothing)";
    const std::string here = i < description.size() ? description[i] : "(nothing)";
    if (saved != here)
      throw InvalidArgument("iterator state of other batches: line " + std::to_string(i) +
                            " of the saved one is '" + saved + "', this source's is '" + here + "'");
  }
  return {state->words, state->batches, state->elements, state->epoch};
}

}  // namespace

SourcedBatches::SourcedBatches(std::shared_ptr<const BatchSource> source, const PipelineOptions& options,
                               std::size_t prefetch, const IteratorState& start)
    : source_(std::move(source)), description_(source_->describe()), seed_(options.seed) {
  position_ = position_in(start.data_.get(), description_, seed_);
  const BatchSourceLayout layout = source_->layout();
  if (layout.batch_size == 0 || layout.sample_shape.empty())
    throw InvalidArgument("BatchSource: its layout needs a batch size and a sample shape");
  // Pixels, labels and identities in the pool's blocks; the field tensors, whatever their kinds, in memory
  // the BatchWriter keeps beside each buffer (the pool's field columns are for samples the pipeline batches).
  pool_ = BatchPool::create(prefetch + options.held_batches + source_->buffers_in_flight(), layout.batch_size,
                            layout.sample_shape, options.host_memory);
  stream_ = source_->open(BatchBuffers(pool_, layout), options, prefetch, position_);
  if (!stream_) throw InvalidArgument("BatchSource::open returned no stream");
  batches_ = position_.batches;
  elements_ = position_.elements;
}

SourcedBatches::~SourcedBatches() {
  if (stream_) stream_->cancel();
  if (pool_) pool_->cancel();
  stream_.reset();  // its threads end before the pool's last users go
}

std::optional<Batch> SourcedBatches::next_batch() {
  if (finished_) return std::nullopt;
  std::optional<Batch> batch;
  try {
    batch = stream_->next();
  } catch (...) {
    finished_ = true;
    throw;
  }
  if (!batch) {
    finished_ = true;
    return std::nullopt;
  }
  position_ = stream_->position();
  batches_.fetch_add(1, std::memory_order_relaxed);
  elements_.fetch_add(batch->size(), std::memory_order_relaxed);
  return batch;
}

PipelineStats SourcedBatches::stats() const {
  PipelineStats stats;
  stream_->add_stats(stats);
  stats.batches = batches_.load(std::memory_order_relaxed);
  stats.elements_out = elements_.load(std::memory_order_relaxed);
  stats.pool_buffers = pool_->allocated();
  stats.pool_capacity = pool_->max_buffers();
  stats.pinned = pool_->pinned();
  return stats;
}

IteratorState SourcedBatches::state() const {
  auto data = std::make_shared<IteratorStateData>();
  data->seed = seed_;
  data->order = description_;
  data->words = position_.words;
  data->batches = position_.batches;
  data->elements = position_.elements;
  data->epoch = position_.epoch;
  return IteratorState(std::move(data));
}

void SourcedBatches::cancel() noexcept {
  stream_->cancel();
  pool_->cancel();
}

}  // namespace conveyor::detail
