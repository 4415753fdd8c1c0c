// The three filters of the pipeline (see pipeline.h) and the per-element work they do.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>
#include <new>

#include "conveyor/error.h"
#include "conveyor/random.h"
#include "src/core/tsan.h"
#include "src/memory/field_columns.h"
#include "src/pipeline/pipeline.h"
#include "src/pipeline/worker_affinity.h"
#include "src/pipeline/worker_priority.h"
#include "src/sources/shard_read_error.h"
#include "src/sources/streamed_fields.h"

namespace conveyor::detail {
namespace {

using Clock = TraceRecorder::Clock;

// TSan: the filter bodies are built on the driver thread and run on workers (see tsan.h). Only the
// address of this constant is used, as the synchronisation object of that hand-off.
const char kFilterBodies = 0;

const char* kind_of(const std::exception& error) {
  if (const auto* decode = dynamic_cast<const DecodeError*>(&error)) return to_string(decode->failure());
  if (const auto* shard = dynamic_cast<const ShardReadError*>(&error)) return shard->kind().c_str();
  if (dynamic_cast<const IoError*>(&error)) return "io";
  if (dynamic_cast<const ShapeMismatch*>(&error)) return "shape_mismatch";
  if (dynamic_cast<const InvalidArgument*>(&error)) return "invalid_argument";
  if (dynamic_cast<const std::bad_alloc*>(&error)) return "out_of_memory";
  if (dynamic_cast<const Error*>(&error)) return "error";
  return "exception";
}

std::string describe(ImageShape shape) {
  return std::to_string(shape.height) + "x" + std::to_string(shape.width) + "x" +
         std::to_string(shape.channels);
}

// A SampleSource names its elements in its read; until then (an error before it) the element is "<source:i>".
void name_element(std::string& path, std::uint64_t index) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
  path.assign("<source:");
  path.append(digits, end);
  path.push_back('>');
}

// The sample's op deferred it: its bytes and descriptor go with the batch (the sample takes the slot's old
// byte buffer in exchange, so capacities circulate and nothing is copied or allocated).
void keep_deferred(Sample& sample, DeferredSlot& slot) noexcept {
  std::swap(slot.encoded, sample.encoded);
  const std::span<const std::byte> descriptor = sample.deferred_descriptor();
  std::copy(descriptor.begin(), descriptor.end(), slot.descriptor.begin());
  slot.descriptor_size = descriptor.size();
}

std::uint64_t nanoseconds(Clock::duration d) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

void Pipeline::run_pipeline() {
  // An abandoned element must not hold back the ones after it, so oneTBB may not keep the order then:
  // collect() restores it itself (waiting_), and an abandoned element's place is filled by the watchdog.
  const tbb::filter_mode collect_mode =
      in_order_ && !abandoning_ ? tbb::filter_mode::serial_in_order : tbb::filter_mode::serial_out_of_order;
  const tbb::filter<void, void> chain =
      tbb::make_filter<void, Element*>(tbb::filter_mode::serial_in_order,
                                       [this](tbb::flow_control& control) {
                                         CONVEYOR_TSAN_ACQUIRE(&kFilterBodies);
                                         return source_stage(control);
                                       }) &
      tbb::make_filter<Element*, Element*>(tbb::filter_mode::parallel,
                                           [this](Element* element) {
                                             CONVEYOR_TSAN_ACQUIRE(&kFilterBodies);
                                             CONVEYOR_TSAN_ACQUIRE(element);
                                             process(*element, /*probing=*/false);
                                             CONVEYOR_TSAN_RELEASE(element);
                                             return element;
                                           }) &
      tbb::make_filter<Element*, void>(collect_mode, [this](Element* element) {
        CONVEYOR_TSAN_ACQUIRE(&kFilterBodies);
        collect(*element);
      });
  CONVEYOR_TSAN_RELEASE(&kFilterBodies);
  CONVEYOR_TSAN_RELEASE(&order_);
  CONVEYOR_TSAN_RELEASE(&assembler_);
  tbb::parallel_pipeline(tokens_, chain, context_);
  // Everything the stages wrote is the driver's again (parallel_pipeline has returned).
  CONVEYOR_TSAN_ACQUIRE(&order_);
  CONVEYOR_TSAN_ACQUIRE(&assembler_);
  for (const auto& element : elements_) CONVEYOR_TSAN_ACQUIRE(element.get());
}

// ---- source: serial, in order ----

Element* Pipeline::source_stage(tbb::flow_control& control) {
  CONVEYOR_TSAN_ACQUIRE(&order_);
  const Clock::time_point start = Clock::now();
  const int track = trace_ ? worker_track() : -1;
  std::chrono::nanoseconds waited{0};
  Element* element = nullptr;
  if (!stop_.load(std::memory_order_relaxed)) {
    std::optional<OrderedElement> next = order_.next();
    if (!next && abandoning_) end_of_stream();
    if (next) {
      element = take_free_element(track, waited);
      if (element != nullptr) {
        order_.save(element->order_state);  // where an iterator resumes after this element
        element->sequence = next_element_sequence_++;
        prepare(*element, *next);
        const bool ready =
            plan_.batched ? reserve_slot(*element, track, waited) : wait_for_room(track, waited);
        if (!ready) {
          release(*element);
          element = nullptr;
        }
      }
    }
  }
  if (element == nullptr) {
    control.stop();
  } else {
    counters_.elements_in.fetch_add(1, std::memory_order_relaxed);
    const Clock::time_point end = Clock::now();
    counters_.count_stage(0, nanoseconds(end - start - waited));
    if (track >= 0) trace_->complete(track, stage_names_[0], end - (end - start - waited), end);
    CONVEYOR_TSAN_RELEASE(element);
  }
  CONVEYOR_TSAN_RELEASE(&order_);
  return element;
}

// A free element; without the watchdog giving elements up there always is one (as many as tokens).
Element* Pipeline::take_free_element(int track, std::chrono::nanoseconds& waited) {
  std::unique_lock lock(free_mutex_);
  if (free_elements_.empty()) {
    const Clock::time_point start = Clock::now();
    element_freed_.wait(lock, [&] { return !free_elements_.empty() || stop_.load(); });
    const Clock::time_point end = Clock::now();
    waited += end - start;
    if (track >= 0) trace_->complete(track, "wait for an element", start, end);
    if (free_elements_.empty()) return nullptr;  // stopping
  }
  Element* element = free_elements_.back();
  free_elements_.pop_back();
  return element;
}

void Pipeline::release(Element& element) {
  {
    std::lock_guard lock(free_mutex_);
    free_elements_.push_back(&element);
  }
  element_freed_.notify_one();
}

void Pipeline::prepare(Element& element, OrderedElement& order) const {
  Sample& sample = element.sample;
  element.source_index = order.source_index;
  element.streamed = order.streamed != nullptr;
  element.buffer = nullptr;
  element.slot = 0;
  element.outcome = Outcome::kept;
  element.fate.store(Fate::running, std::memory_order_relaxed);
  sample.set_decode_budget(const_cast<MemoryBudget*>(&decode_budget_));
  sample.set_field_options(&plan_.options.fields);
  sample.index = order.index;
  sample.epoch = order.epoch;
  sample.seed = sample_seed(plan_.options.seed, order.epoch, order.index);
  sample.padding = order.padding;
  if (element.streamed) {
    StreamedSample& streamed = *order.streamed;
    std::swap(sample.encoded, streamed.bytes);  // the streamed sample goes back with the old buffers
    take_streamed_fields(streamed, sample, element.fields_json);
    sample.label = streamed.label;
    sample.path.assign(streamed.path);
    element.stream_error_kind.assign(streamed.error_kind);
    element.stream_error_reason.assign(streamed.error_reason);
    order.streamed.reset();
    return;
  }
  if (plan_.source->sample_source()) {
    sample.label = -1;
    name_element(sample.path, order.source_index);
    return;
  }
  sample.label = plan_.source->label(order.source_index);
  sample.path.assign(plan_.source->path(order.source_index));
}

// The pipeline pauses while `prefetch` items are ready: the consumer is the bottleneck then, and work
// done now would only wait in memory.
bool Pipeline::wait_for_room(int track, std::chrono::nanoseconds& waited) {
  if (queue_.has_room(prefetch_)) return true;
  const Clock::time_point start = Clock::now();
  const bool ready = queue_.wait_for_room(prefetch_);
  const Clock::time_point end = Clock::now();
  waited += end - start;
  if (track >= 0) trace_->complete(track, "wait for consumer", start, end);
  return ready;
}

bool Pipeline::reserve_slot(Element& element, int track, std::chrono::nanoseconds& waited) {
  if (current_ == nullptr || current_used_ == plan_.batch_size) {
    current_ = nullptr;
    if (!wait_for_room(track, waited)) return false;
    std::shared_ptr<BatchBuffer> buffer = pool_->try_acquire();
    if (!buffer) {
      const Clock::time_point start = Clock::now();
      buffer = pool_->acquire([this] { queue_.poke(); });  // let a waiting consumer see it is stuck
      const Clock::time_point end = Clock::now();
      waited += end - start;
      if (track >= 0) trace_->complete(track, "wait for buffer", start, end);
      if (!buffer) return false;  // cancelled
    }
    current_ = assembler_->open(std::move(buffer));
    current_used_ = 0;
  }
  element.buffer = current_;
  element.slot = current_used_++;
  // An op that may be abandoned must never hold the slot (it could write there after the batch left):
  // it works in the element's own images and the pipeline copies the result (copy_into_slot).
  if (!abandoning_) {
    element.sample.bind_slot(assembler_->slot(*current_, element.slot));
    if (FieldColumns* fields = current_->buffer->fields) fields->bind(element.sample.fields(), element.slot);
  }
  return true;
}

// ---- process: parallel ----

void Pipeline::process(Element& element, bool probing) noexcept {
  auto given_up = [&] {
    return stop_.load(std::memory_order_relaxed) ||
           element.fate.load(std::memory_order_relaxed) == Fate::abandoned;
  };
  if (given_up()) {
    element.outcome = Outcome::cancelled;
    return;
  }
  const int track = trace_ && !probing ? worker_track() : -1;
  Sample& sample = element.sample;
  if (!run_stage(element, read_stage_, track, probing, [&] {
        if (!element.streamed) {
          plan_.source->load(element.source_index, sample, plan_.options.max_file_bytes);
        } else if (!element.stream_error_kind.empty()) {
          // The reader found the problem ahead of time; it fails here, at the element's place.
          throw ShardReadError(element.stream_error_kind, element.stream_error_reason);
        } else {
          read_streamed_fields(plan_.source->fields(), element.fields_json, sample);
        }
        // What the source put in the sample's fields, checked by each field's type (cheap: a sample without
        // fields asks three empty ones).
        for (std::size_t f = 0; f < sample.fields().size(); ++f)
          if (!sample.fields()[f].empty()) sample.fields()[f].check_read();
      }))
    return;
  for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
    if (given_up()) {
      element.outcome = Outcome::cancelled;
      return;
    }
    const Step& step = plan_.steps[i];
    sample.op_position = static_cast<std::uint32_t>(i);  // the op's Rng stream includes it (Sample::rng)
    if (step.map) {
      // Only the last map of a batched chain may leave the pixels to a stage after batching: no op after
      // it needs them (conveyor/defer.h).
      const bool may_defer =
          defer_policy_ != nullptr && element.buffer != nullptr && i + 1 == plan_.steps.size();
      sample.offer_defer(may_defer ? defer_policy_ : nullptr);
      const bool ran = run_stage(element, 2 + i, track, probing, [&] { step.map(sample); });
      sample.offer_defer(nullptr);
      if (!ran) return;
    } else {
      bool keep = true;
      if (!run_stage(element, 2 + i, track, probing, [&] { keep = step.keep(sample); })) return;
      if (!keep) {
        element.outcome = Outcome::filtered;
        return;
      }
    }
  }
  if (element.buffer == nullptr) return;
  if (sample.deferred()) {
    // An abandoned element's batch may be delivered already: like copy_into_slot, only a running one
    // hands over its bytes.
    Fate expected = Fate::running;
    if (abandoning_ && !element.fate.compare_exchange_strong(expected, Fate::finishing)) return;
    counters_.deferred.fetch_add(1, std::memory_order_relaxed);
    keep_deferred(sample, element.buffer->buffer->deferred[element.slot]);
    if (fields_in_batch_ || sample.fields().any())
      run_stage(element, batch_stage_, track, probing, [&] { place_fields(element); });
  } else if (!sample.in_slot() || fields_in_batch_ || sample.fields().any()) {
    run_stage(element, batch_stage_, track, probing, [&] { copy_into_slot(element); });
  }
}

// The last op wrote its pixels elsewhere (it did not use Sample::output, the shape differs, or the slot
// was kept from the ops because the watchdog may abandon them): copy them into the slot, on the worker, so
// that batching stays parallel. An abandoned element copies nothing: its slot is no longer its own.
void Pipeline::copy_into_slot(Element& element) {
  if (abandoning_) {
    Fate expected = Fate::running;
    if (!element.fate.compare_exchange_strong(expected, Fate::finishing)) return;
  }
  if (!element.sample.in_slot()) {
    const ConstImageView image = element.sample.image();
    const ImageView slot = assembler_->slot(*element.buffer, element.slot);
    if (image.empty())
      throw InvalidArgument("no image after the maps: batch() needs an op that produces pixels");
    if (image.shape() != slot.shape())
      throw ShapeMismatch("image is " + describe(image.shape()) + " but the batch's samples are " +
                          describe(slot.shape()));
    const std::size_t row_bytes = static_cast<std::size_t>(image.width) * image.channels;
    for (int y = 0; y < image.height; ++y) std::memcpy(slot.row(y), image.row(y), row_bytes);
  }
  place_fields(element);
}

void Pipeline::place_fields(Element& element) {
  FieldList& fields = element.sample.fields();
  if (FieldColumns* columns = element.buffer->buffer->fields) {
    columns->take(fields, element.slot);
    return;
  }
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (!fields[i].empty()) throw_field_without_column(fields[i]);
}

template <class F>
bool Pipeline::run_stage(Element& element, std::size_t stage, int track, bool probing, F&& body) noexcept {
  // Whichever thread runs a stage works for the pipeline: it gives way to the consumer's (worker_nice).
  if (plan_.options.worker_nice > 0) raise_this_threads_nice(plan_.options.worker_nice);
  // ... and on the CPUs the pipeline was given (PipelineOptions::cpus; none: where it ran before any).
  pin_this_thread(plan_.options.cpus);
  const Clock::time_point start = Clock::now();
  const bool watched = !probing && watching_;
  if (watched) {
    std::lock_guard lock(element.watch_mutex);
    element.watch = {static_cast<int>(stage), start, tbb::this_task_arena::current_thread_index(),
                     static_cast<std::uint64_t>(::gettid()), false};
  }
  bool failed = false;
  try {
    body();
  } catch (const std::exception& error) {
    failed = true;
    element.error_kind = kind_of(error);  // may point into the exception: copied while it lives
    element.error_reason = error.what();
  } catch (...) {
    failed = true;
    element.error_kind = "unknown";
    element.error_reason = "an exception that is not a std::exception";
  }
  if (watched) {
    std::lock_guard lock(element.watch_mutex);
    element.watch.stage = -1;
  }
  if (failed) {
    element.outcome = Outcome::failed;
    element.failed_stage = stage;
  }
  if (!probing) {
    const Clock::time_point end = Clock::now();
    counters_.count_stage(stage, nanoseconds(end - start));
    if (failed) counters_.stage(stage).failures.fetch_add(1, std::memory_order_relaxed);
    if (track >= 0) trace_->complete(track, stage_names_[stage], start, end);
  }
  return !failed;
}

int Pipeline::worker_track() {
  const int slot = tbb::this_task_arena::current_thread_index();
  if (slot < 0 || slot >= threads_) return -1;
  std::atomic<int>& track = slot_tracks_[static_cast<std::size_t>(slot)];
  int id = track.load(std::memory_order_acquire);
  if (id == -1) {
    try {
      id = trace_->track("worker " + std::to_string(slot));
    } catch (const std::exception&) {
      id = -2;  // out of tracks: this slot records nothing
    }
    track.store(id, std::memory_order_release);
  }
  return id;
}

// ---- collect: serial ----

void Pipeline::collect(Element& element) {
  CONVEYOR_TSAN_ACQUIRE(&assembler_);
  CONVEYOR_TSAN_ACQUIRE(&element);
  std::lock_guard lock(collect_mutex_);
  Fate fate = Fate::running;
  if (abandoning_ && !element.fate.compare_exchange_strong(fate, Fate::finishing) &&
      fate == Fate::abandoned) {
    // The watchdog gave it up and filled its place long ago; its stage has returned at last.
    element.sample.recycle();
    release(element);
  } else if (!(in_order_ && abandoning_)) {
    collect_one(element);  // oneTBB kept the order (or none is wanted)
  } else {
    arrive_in_order({true, &element, element.sequence, nullptr, 0});
  }
  CONVEYOR_TSAN_RELEASE(&assembler_);
}

// With abandoning, a stuck stage keeps parallel_pipeline (and so the driver's final flush) from returning:
// once every element has arrived, collect finishes the batches and closes the queue itself.
void Pipeline::end_of_stream() {
  std::lock_guard lock(collect_mutex_);
  end_sequence_ = next_element_sequence_;
  finish_if_complete();
}

void Pipeline::finish_if_complete() {
  if (finished_early_ || arrived_ != end_sequence_) return;
  finished_early_ = true;
  // The source stage has ended: current_ and current_used_ no longer change.
  if (assembler_ && !stop_.load() && !failed_) assembler_->finish(current_, current_used_, sink_);
  queue_.close();
}

void Pipeline::arrive_in_order(const Arrival& arrival) {
  // Every element alive has a sequence in [next_sequence_, next_sequence_ + tokens_): there are tokens_.
  waiting_[arrival.sequence % tokens_] = arrival;
  for (;;) {
    Arrival& next = waiting_[next_sequence_ % tokens_];
    if (!next.present || next.sequence != next_sequence_) break;
    const Arrival ready = std::exchange(next, Arrival{});
    ++next_sequence_;
    if (ready.element != nullptr) {
      collect_one(*ready.element);
    } else {
      collect_hole(ready);
    }
  }
}

// An abandoned element's place: its slot becomes a hole, as a skipped element's does.
void Pipeline::collect_hole(const Arrival& hole) {
  if (plan_.batched && !failed_) assembler_->arrive(*hole.buffer, hole.slot, false, -1, {}, {}, sink_);
  ++arrived_;
  finish_if_complete();
}

void Pipeline::collect_one(Element& element) {
  const Clock::time_point start = Clock::now();
  switch (element.outcome) {
    case Outcome::filtered:
      counters_.filtered.fetch_add(1, std::memory_order_relaxed);
      break;
    case Outcome::failed:
      if (plan_.options.on_error == OnError::skip) {
        counters_.record_skip(element.sample.path, stage_names_[element.failed_stage], element.error_kind,
                              element.error_reason);
      } else if (!failed_) {
        // Every element before this one has been collected (in order): the error lands at its position.
        failed_ = true;
        stop_.store(true);
        // Made before it is queued, so that the PipelineError temporary dies here, not after the consumer
        // may have read and dropped the queued copy: the two share their message through libstdc++'s
        // reference count, which is atomic but invisible to ThreadSanitizer (libstdc++ is not built with
        // it), so a last free on this thread would be reported as a race with the consumer's read.
        std::exception_ptr error = std::make_exception_ptr(error_of(element));
        deliver(std::move(error));
      }
      break;
    case Outcome::kept:
    case Outcome::cancelled:
      break;
  }
  const bool kept = element.outcome == Outcome::kept;
  if (!failed_) {
    if (plan_.batched) {
      const Sample& sample = element.sample;
      const SampleInfo info{.index = sample.index,
                            .epoch = sample.epoch,
                            .seed = sample.seed,
                            .padding = sample.padding,
                            .deferred = sample.deferred()};
      assembler_->arrive(*element.buffer, element.slot, kept, sample.label, info, element.order_state, sink_);
    } else if (kept) {
      deliver(std::move(element.sample), element.order_state);
    }
  }
  const Clock::time_point end = Clock::now();
  counters_.count_stage(collect_stage_, nanoseconds(end - start));
  if (trace_) {
    const int track = worker_track();
    if (track >= 0) trace_->complete(track, stage_names_[collect_stage_], start, end);
  }
  element.buffer = nullptr;
  element.sample.recycle();
  release(element);
  if (abandoning_) {
    ++arrived_;
    finish_if_complete();
  }
}

PipelineError Pipeline::error_of(const Element& element) const {
  return PipelineError(element.sample.path, stage_names_[element.failed_stage], element.error_reason);
}

}  // namespace conveyor::detail
