// A sample's boxes (and tags) written as JSON, as WebDataset shards carry them beside the image:
//   {"boxes": [[x0, y0, x1, y1], ...], "classes": [c, ...], "crowd": [0, 1, ...], "tags": [t, ...]}
// in the image's pixels; "crowd" and "tags" are optional, and so are "boxes" with "classes" when a sample
// has none (an empty object is a sample without boxes).
#pragma once

#include <cstdint>
#include <span>

#include "conveyor/sample.h"

namespace conveyor::detail {

// Appends the boxes (with their classes and crowd flags) to sample.boxes and the tags to sample.tags.
// Throws ShardReadError "bad_fields" saying what is wrong (not JSON, a box that is not four numbers, as
// many classes as boxes, ...).
void parse_fields_json(std::span<const std::uint8_t> text, Sample& sample);

}  // namespace conveyor::detail
