// Enumerations as the strings Python users write (on_error="skip", interpolation="area", dtype="bfloat16"):
// one table per enumeration, read both ways, and an error that lists what is accepted.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "conveyor/error.h"

namespace conveyor::python {

// A table: constexpr Choice<OnError> kOnError[] = {{"fail", OnError::fail}, {"skip", OnError::skip}};
template <class Enum>
using Choice = std::pair<std::string_view, Enum>;

// The value named `text`; InvalidArgument (ValueError in Python) naming `what` and the accepted names.
template <class Enum, std::size_t N>
Enum parse_choice(std::string_view what, std::string_view text, const Choice<Enum> (&table)[N]) {
  std::string accepted;
  for (const auto& [name, value] : table) {
    if (name == text) return value;
    accepted += (accepted.empty() ? "'" : ", '") + std::string(name) + "'";
  }
  throw InvalidArgument(std::string(what) + " must be one of " + accepted + "; got '" + std::string(text) +
                        "'");
}

// The name of `value` (the first one listed for it).
template <class Enum, std::size_t N>
std::string choice_name(Enum value, const Choice<Enum> (&table)[N]) {
  for (const auto& [name, candidate] : table)
    if (candidate == value) return std::string(name);
  return "unknown";
}

}  // namespace conveyor::python
