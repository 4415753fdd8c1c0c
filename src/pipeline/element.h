// One token of the pipeline: a recycled Sample plus where its pixels go and how its stages went. There
// are exactly as many Elements as tokens, reused from element to element, so a warm pipeline allocates
// nothing per sample.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/sample.h"

namespace conveyor::detail {

struct BufferState;

enum class Outcome : std::uint8_t { kept, filtered, failed, cancelled };

struct Element {
  Sample sample;
  std::uint64_t source_index = 0;
  bool streamed = false;          // the bytes came with the element (tar shards): nothing to load
  std::string stream_error_kind;  // a streamed sample that could not be read: why (empty: it was)
  std::string stream_error_reason;
  BufferState* buffer = nullptr;  // batches only: the buffer that holds this element's slot
  std::size_t slot = 0;
  Outcome outcome = Outcome::kept;
  std::size_t failed_stage = 0;  // index into the pipeline's stage names
  std::string error_kind;        // "io", "truncated", ...: the key of the skip counts
  std::string error_reason;      // the exception's message
};

}  // namespace conveyor::detail
