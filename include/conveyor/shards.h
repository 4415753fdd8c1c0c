// Splitting a data set across the ranks of a data-parallel job, and reading it from tar shards.
#pragma once

#include <cstdint>

namespace conveyor {

// What a split across ranks does with an epoch whose length n is not a multiple of the number of ranks.
// With pad or drop every rank gets the same number of elements in every epoch, so every rank runs the
// same number of steps and no collective waits for a rank that has run out. Batches then also keep their
// count when elements go missing: an element that fails under on_error = skip, or that a filter rejects,
// leaves its slot in the batch as padding (a copy of a sample of the same batch, flagged
// Batch::is_padding) instead of closing the gap.
enum class ShardRemainder : std::uint8_t {
  uneven,  // ranks differ by at most one element; nothing is repeated or left out
  pad,     // every rank gets ceil(n / ranks): a rank that is one short repeats one element of the epoch's
           // start (torch's DistributedSampler rule), flagged Sample::padding / Batch::is_padding
  drop,    // every rank gets floor(n / ranks): the epoch's last n mod ranks elements are left out
};

// Short, stable name of a ShardRemainder ("pad", ...).
const char* to_string(ShardRemainder remainder) noexcept;

}  // namespace conveyor
