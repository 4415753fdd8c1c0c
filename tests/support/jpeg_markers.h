// Finding a JPEG's segments, for fixtures that patch headers (a declared size, a precision, a cut scan).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

namespace conveyor::testing {

// SOFn codes: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
inline bool is_frame_marker(std::uint8_t code) {
  return code >= 0xC0 && code <= 0xCF && code != 0xC4 && code != 0xC8 && code != 0xCC;
}

// Offset of the first marker (FF code) for which `wanted` holds, walking the segments after SOI.
template <class Wanted>
std::size_t find_marker(std::span<const std::uint8_t> jpeg, Wanted wanted) {
  std::size_t at = 2;
  while (at + 4 <= jpeg.size()) {
    if (jpeg[at] != 0xFF) throw std::runtime_error("find_marker: lost in the segments");
    const std::uint8_t code = jpeg[at + 1];
    if (wanted(code)) return at;
    if (code == 0xDA) break;  // entropy-coded data follows
    at += 2 + (static_cast<std::size_t>(jpeg[at + 2]) << 8 | jpeg[at + 3]);
  }
  throw std::runtime_error("find_marker: no such marker");
}

}  // namespace conveyor::testing
