// A 64-bit value as conveyor writes checksums and seeds into files and descriptions: "0x" and 16 lower-case
// hexadecimal digits, so that two of them compare as text. One definition for the iterator state, the
// checkpoint and the element order's description, which must agree.
#pragma once

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <string>

namespace conveyor::detail {

inline std::string hex(std::uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, value);
  return text;
}

}  // namespace conveyor::detail
