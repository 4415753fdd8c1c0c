// EXIF orientation: reading the tag from an APP1 segment, and mapping between the stored image and the
// upright one.
#pragma once

#include <cstdint>
#include <span>

#include "conveyor/image.h"
#include "conveyor/ops/rect.h"

namespace conveyor::ops::detail {

// The orientation tag (1..8) of an APP1 segment's payload ("Exif\0\0" + TIFF), or 0 when the segment
// is not EXIF, has no orientation tag, or is malformed. Every read is bounds-checked: the bytes come
// from the file.
int exif_orientation(std::span<const std::uint8_t> app1) noexcept;

// The window of the stored image (stored_width x stored_height) that becomes `upright` once turned by
// `orientation`.
Rect stored_rect(Rect upright, int orientation, int stored_width, int stored_height) noexcept;

// Writes `stored` turned upright by `orientation` into `upright` (whose shape must be the turned shape).
void apply_orientation(ConstImageView stored, int orientation, ImageView upright);

}  // namespace conveyor::ops::detail
