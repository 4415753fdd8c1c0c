// One token of the pipeline: a recycled Sample plus where its pixels go and how its stages went. There
// are exactly as many Elements as tokens, reused from element to element, so a warm pipeline allocates
// nothing per sample.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/sample.h"

namespace conveyor::detail {

struct BufferState;

enum class Outcome : std::uint8_t { kept, filtered, failed, cancelled };

// What the watchdog may do to an element, decided once (compare-and-swap): the element either finishes
// its work (it copies its pixels into the slot) or is abandoned, never both.
enum class Fate : std::uint8_t { running, finishing, abandoned };

// The stage an element is in, as the watchdog sees it (guarded by the element's watch_mutex).
struct StageWatch {
  int stage = -1;  // index into the pipeline's stage names; -1: between stages
  std::chrono::steady_clock::time_point start{};
  int worker = -1;
  std::uint64_t thread_id = 0;
  bool reported = false;  // this stage of this element was reported already
};

struct Element {
  Sample sample;
  std::uint64_t source_index = 0;
  std::uint64_t sequence = 0;     // 0, 1, 2, ... in the source stage's order: collect restores it
  bool streamed = false;          // the bytes came with the element (tar shards): nothing to load
  std::string stream_error_kind;  // a streamed sample that could not be read: why (empty: it was)
  std::string stream_error_reason;
  std::vector<std::uint8_t> fields_json;  // a streamed sample's boxes member, parsed in the read stage
  BufferState* buffer = nullptr;  // batches only: the buffer that holds this element's slot
  std::size_t slot = 0;
  Outcome outcome = Outcome::kept;
  std::size_t failed_stage = 0;            // index into the pipeline's stage names
  std::string error_kind;                  // "io", "truncated", ...: the key of the skip counts
  std::string error_reason;                // the exception's message
  std::vector<std::uint64_t> order_state;  // ElementOrder::save right after this element was chosen

  // ---- watchdog (only when PipelineOptions::stall_limit is set) ----
  std::mutex watch_mutex;
  StageWatch watch;
  std::atomic<Fate> fate{Fate::running};
};

}  // namespace conveyor::detail
