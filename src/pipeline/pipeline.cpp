// The driver and the consumer side of a Pipeline; the stage bodies are in pipeline_stages.cpp.
#include "src/pipeline/pipeline.h"

#include <tbb/info.h>

#include <algorithm>
#include <opencv2/core/utility.hpp>

#include "conveyor/error.h"
#include "conveyor/field_kinds.h"
#include "src/core/tsan.h"
#include "src/pipeline/iterator_state_data.h"
#include "src/sources/shard_set.h"

namespace conveyor::detail {
namespace {

int resolve_threads(const PipelineOptions& options) {
  if (options.threads > 0) return options.threads;
  if (!options.cpus.empty()) return static_cast<int>(options.cpus.size());  // one per CPU given
  return std::max(1, tbb::info::default_concurrency());
}

// In order, an element that takes long holds back those behind it until it is collected; enough tokens
// let the other threads go on with later elements meanwhile. A token costs one Sample's buffers.
std::size_t resolve_tokens(const PipelineOptions& options, int threads) {
  return options.max_in_flight > 0 ? options.max_in_flight
                                   : static_cast<std::size_t>(std::max(8 * threads, 8));
}

bool delivers_in_order(const PipelinePlan& plan, int threads) {
  // With one thread nothing can overtake anything; in-order keeps the pool's bound tight.
  return plan.options.deterministic || threads == 1;
}

// prefetch + in-flight + held. In order, the elements in flight (fewer than `tokens`) span at most
// ceil((tokens - 1) / B) + 1 buffers, plus the partial batch that closes holes and the buffer being
// opened. Out of order, every element in flight may hold up its own buffer.
std::size_t pool_capacity(const PipelinePlan& plan, std::size_t tokens, int threads) {
  if (!plan.batched) return 0;
  const std::size_t b = plan.batch_size;
  const std::size_t in_flight = delivers_in_order(plan, threads) ? (tokens - 1 + b - 1) / b + 3 : tokens + 2;
  return plan.prefetch + in_flight + std::max<std::size_t>(plan.options.held_batches, 1);
}

std::vector<std::string> stage_names(const PipelinePlan& plan) {
  std::vector<std::string> names{"source", "read"};
  for (const Step& step : plan.steps) names.push_back(step.name);
  if (plan.batched) names.emplace_back("batch");
  names.emplace_back("collect");
  return names;
}

}  // namespace

Pipeline::Pipeline(PipelinePlan plan, const IteratorState& start)
    : plan_(std::move(plan)),
      threads_(resolve_threads(plan_.options)),
      tokens_(resolve_tokens(plan_.options, threads_)),
      prefetch_(plan_.prefetch),
      pool_capacity_(pool_capacity(plan_, tokens_, threads_)),
      stage_names_(stage_names(plan_)),
      read_stage_(1),
      batch_stage_(plan_.batched ? 2 + plan_.steps.size() : stage_names_.size()),
      collect_stage_(stage_names_.size() - 1),
      trace_(plan_.options.trace.get()),
      order_description_(ElementOrder::describe(*plan_.source, plan_.order)),
      in_order_(delivers_in_order(plan_, threads_)),
      watching_(plan_.options.stall_limit.count() > 0),
      abandoning_(watching_ && plan_.options.abandon_stalled && plan_.options.on_error == OnError::skip),
      defer_policy_(plan_.options.defer.get()),
      counters_(stage_names_),
      queue_(plan_.batched ? pool_capacity_ + 1 : prefetch_ + tokens_ + 1),
      decode_budget_(plan_.options.decode_memory_budget),
      order_(*plan_.source, plan_.order, plan_.options.max_file_bytes, in_order_),
      sink_([this](Batch batch, std::span<const std::uint64_t> state) { deliver(std::move(batch), state); }),
      arena_(threads_) {
  if (const IteratorStateData* state = start.data_.get()) {
    consumed_ = restore_order(*state, order_description_, plan_.options.seed, order_);
    delivered_items_ = state->combined ? 0 : state->batches;
    delivered_elements_ = state->combined ? 0 : state->elements;
    delivered_epoch_ = state->epoch;
  }
  first_sequence_ = delivered_items_;
  // What the source left out when it was made (an image without its mask, ...) counts as skipped here.
  if (const auto& custom = plan_.source->sample_source())
    for (const SkippedSample& left_out : custom->left_out())
      counters_.record_skip(left_out.path, left_out.stage, "left_out", left_out.reason);
  start_state_.resize(order_.state_words());
  order_.save(start_state_);
  delivered_state_ = start_state_;
  popped_state_.reserve(start_state_.size());
  waiting_.assign(tokens_, Arrival{});
  elements_.reserve(tokens_);
  free_elements_.reserve(tokens_);
  for (std::size_t i = 0; i < tokens_; ++i) {
    elements_.push_back(std::make_unique<Element>());
    elements_.back()->order_state.resize(order_.state_words());
    free_elements_.push_back(elements_.back().get());
  }
  if (trace_) {
    consumer_track_ = trace_->track("consumer");
    slot_tracks_ = std::make_unique<std::atomic<int>[]>(static_cast<std::size_t>(threads_));
    for (int i = 0; i < threads_; ++i) slot_tracks_[static_cast<std::size_t>(i)].store(-1);
  }
  // OpenCV's own thread pool would oversubscribe the arena's cores when an op calls cv::resize & co.
  // This setting is process-wide in OpenCV: every iterator sets the same value.
  cv::setNumThreads(0);
  if (trace_ && watching_) watchdog_track_ = trace_->track("watchdog");
  if (watching_) watchdog_ = std::thread([this] { watch(); });
  driver_ = std::thread([this] { drive(); });
}

Pipeline::~Pipeline() {
  cancel();
  if (watchdog_.joinable()) watchdog_.join();
  driver_.join();
}

void Pipeline::cancel() noexcept {
  cancelled_.store(true);
  stop_.store(true);
  context_.cancel_group_execution();
  {
    std::lock_guard lock(setup_mutex_);
    if (pool_) pool_->cancel();
    if (probe_order_) probe_order_->cancel();
  }
  order_.cancel();  // a streamed source's readers may be waiting on a disk or a server
  queue_.cancel();
  decode_budget_.cancel();  // a decode waiting for memory gives up
  {
    std::lock_guard lock(free_mutex_);  // a source stage between its check of stop_ and its wait sees it
  }
  element_freed_.notify_all();
  {
    std::lock_guard lock(watchdog_mutex_);
    watchdog_stop_ = true;
  }
  watchdog_wake_.notify_all();
}

void Pipeline::drive() noexcept {
  try {
    arena_.execute([this] {
      if (plan_.batched) {
        const std::optional<BatchLayout> layout = batch_layout();
        if (!layout) return;  // no element, a failure at the first one, or a cancel
        start_batching(*layout);
      }
      run_pipeline();
    });
    bool finished;
    {
      std::lock_guard lock(collect_mutex_);
      finished = finished_early_;
    }
    if (assembler_ && !stop_.load() && !finished) assembler_->finish(current_, current_used_, sink_);
  } catch (...) {
    if (!cancelled_.load()) deliver(std::current_exception());
  }
  if (assembler_) assembler_->discard();
  queue_.close();
}

BatchLayout Pipeline::layout_for(ImageShape image, const Sample* probed) const {
  BatchLayout layout;
  layout.image = image;
  layout.options = plan_.batch_options;
  layout.fields =
      batch_field_kinds(plan_.source->fields(), layout.options, probed != nullptr ? &probed->fields() : nullptr);
  return layout;
}

std::optional<BatchLayout> Pipeline::batch_layout() {
  if (plan_.shape) return layout_for(*plan_.shape, nullptr);
  return probe_layout();
}

std::optional<BatchLayout> Pipeline::probe_layout() {
  // The first element that makes it through the maps gives the batch's sample shape. It runs again in
  // the pipeline proper (a pure function of its bytes and seed): the probe costs one element's work.
  ElementOrder order(*plan_.source, plan_.order, plan_.options.max_file_bytes, in_order_);
  order.restore(start_state_);
  if (!consumed_.empty()) order.exclude(consumed_, /*keep_frontier=*/true);
  {
    std::lock_guard lock(setup_mutex_);
    probe_order_ = &order;
    if (cancelled_.load()) order.cancel();
  }
  struct Forget {
    Pipeline& pipeline;
    ~Forget() {
      std::lock_guard lock(pipeline.setup_mutex_);
      pipeline.probe_order_ = nullptr;
    }
  } forget{*this};
  Element element;
  while (!stop_.load()) {
    std::optional<OrderedElement> next = order.next();
    if (!next) return std::nullopt;
    prepare(element, *next);
    process(element, /*probing=*/true);
    if (element.outcome == Outcome::kept) {
      const ImageShape shape = element.sample.image().shape();
      if (!shape.empty()) return layout_for(shape, &element.sample);
      element.outcome = Outcome::failed;
      element.failed_stage = batch_stage_;
      element.error_kind = "no_image";
      element.error_reason = "no image after the maps: batch() needs an op that produces pixels";
    }
    if (element.outcome == Outcome::failed && plan_.options.on_error == OnError::fail) {
      failed_ = true;
      stop_.store(true);
      std::exception_ptr error = std::make_exception_ptr(error_of(element));  // see collect()
      deliver(std::move(error));
      return std::nullopt;
    }
    element.sample.recycle();
  }
  return std::nullopt;
}

void Pipeline::start_batching(const BatchLayout& layout) {
  assembler_.emplace(plan_.batch_size, layout.image, plan_.drop_remainder, pool_capacity_,
                     order_.state_words(), first_sequence_, plan_.even, layout.fields);
  fields_in_batch_ = !layout.fields.empty();
  std::shared_ptr<BatchPool> pool =
      BatchPool::create_with_layout(pool_capacity_, plan_.batch_size, layout, plan_.options.host_memory);
  std::lock_guard lock(setup_mutex_);
  pool_ = std::move(pool);
  if (cancelled_.load()) pool_->cancel();
}

void Pipeline::deliver(OutputQueue::Item item, std::span<const std::uint64_t> state) {
  const std::size_t depth = queue_.push(std::move(item), state);
  counters_.queue_pushed(depth);
  if (trace_)
    trace_->counter(plan_.batched ? "batches ready" : "samples ready", TraceRecorder::now(),
                    static_cast<double>(depth));
}

OutputQueue::Popped Pipeline::pop() {
  std::function<bool()> stuck;
  if (plan_.batched) {
    // Every buffer is lent out and the source stage waits for one: only the consumer can end that.
    stuck = [this] {
      std::lock_guard lock(setup_mutex_);
      return pool_ && pool_->waiting();
    };
  }
  const TraceRecorder::TimePoint start = TraceRecorder::now();
  OutputQueue::Popped popped = queue_.pop(stuck, popped_state_);
  counters_.queue_popped(popped.depth);
  if (popped.waited.count() > 0) {
    counters_.consumer_waits.fetch_add(1, std::memory_order_relaxed);
    counters_.consumer_wait_ns.fetch_add(static_cast<std::uint64_t>(popped.waited.count()),
                                         std::memory_order_relaxed);
    if (trace_) trace_->complete(consumer_track_, "wait", start, start + popped.waited);
  }
  if (trace_ && popped.status == OutputQueue::Status::item)
    trace_->counter(plan_.batched ? "batches ready" : "samples ready", TraceRecorder::now(),
                    static_cast<double>(popped.left));
  return popped;
}

std::optional<Batch> Pipeline::next_batch() {
  if (finished_) return std::nullopt;
  OutputQueue::Popped popped = pop();
  if (popped.status == OutputQueue::Status::end) {
    finished_ = true;
    return std::nullopt;
  }
  if (popped.status == OutputQueue::Status::stuck) {
    throw Error("Iterator::next: all " + std::to_string(pool_capacity_) +
                " batch buffers are lent out and none is ready: the consumer keeps more batches alive than "
                "PipelineOptions::held_batches (" +
                std::to_string(plan_.options.held_batches) +
                "); release batches before asking for more, or raise held_batches");
  }
  if (auto* error = std::get_if<std::exception_ptr>(&popped.item)) {
    finished_ = true;
    std::rethrow_exception(*error);
  }
  Batch batch = std::move(std::get<Batch>(popped.item));
  counters_.batches.fetch_add(1, std::memory_order_relaxed);
  counters_.elements_out.fetch_add(batch.size(), std::memory_order_relaxed);
  delivered_state_.swap(popped_state_);
  ++delivered_items_;
  delivered_elements_ += batch.size();
  if (batch.size() > 0) delivered_epoch_ = batch.samples().back().epoch;
  return batch;
}

std::optional<Sample> Pipeline::next_sample() {
  if (finished_) return std::nullopt;
  OutputQueue::Popped popped = pop();
  if (popped.status != OutputQueue::Status::item) {
    finished_ = true;
    return std::nullopt;
  }
  if (auto* error = std::get_if<std::exception_ptr>(&popped.item)) {
    finished_ = true;
    std::rethrow_exception(*error);
  }
  counters_.elements_out.fetch_add(1, std::memory_order_relaxed);
  Sample sample = std::move(std::get<Sample>(popped.item));
  sample.set_decode_budget(nullptr);  // the budget dies with the pipeline; the sample may live on
  delivered_state_.swap(popped_state_);
  ++delivered_items_;
  ++delivered_elements_;
  delivered_epoch_ = sample.epoch;
  return sample;
}

IteratorState Pipeline::state() const {
  if (!in_order_)
    throw InvalidArgument("Iterator::state: the pipeline delivers out of order (deterministic = false with " +
                          std::to_string(threads_) +
                          " threads), so no single position describes what it delivered");
  auto data = std::make_shared<IteratorStateData>();
  data->seed = plan_.options.seed;
  data->order = order_description_;
  data->words = delivered_state_;
  data->batches = delivered_items_;
  data->elements = delivered_elements_;
  data->epoch = delivered_epoch_;
  if (const std::optional<ShardFrontier> frontier = order_.shard_frontier(delivered_state_)) {
    data->sharded = true;
    for (const OrderOp& op : plan_.order)
      if (const auto* shard = std::get_if<ShardOrder>(&op)) {
        data->shard_index = shard->index;
        data->shard_count = shard->num_shards;
      }
    data->frontier = *frontier;
    for (const ConsumedElements& set : consumed_)
      if (set.matters_after(*frontier)) data->consumed.push_back(set);
  }
  return IteratorState(std::move(data));
}

PipelineStats Pipeline::stats() const {
  PipelineStats stats = counters_.snapshot();
  stats.threads = threads_;
  stats.max_in_flight = tokens_;
  stats.queue.capacity = prefetch_;
  stats.queue.current = queue_.size();
  stats.pool_capacity = pool_capacity_;
  stats.decode_memory_budget = decode_budget_.budget();
  stats.decode_memory_peak = decode_budget_.peak();
  stats.decode_memory_waits = decode_budget_.waits();
  if (const std::shared_ptr<const ShardSet>& shards = plan_.source->shard_set(); shards && shards->opener)
    stats.remote = shards->opener->stats();
  std::lock_guard lock(setup_mutex_);
  if (pool_) {
    stats.pool_buffers = pool_->allocated();
    stats.pinned = pool_->pinned();
  }
  return stats;
}

}  // namespace conveyor::detail
