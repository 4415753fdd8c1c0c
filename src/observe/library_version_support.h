// What every wing's version report shares: reading "X.Y.Z" and saying which file a library came from.
#pragma once

#include <optional>
#include <string_view>

#include "conveyor/library_version.h"
#include "src/observe/loaded_object.h"

namespace conveyor::detail {

// "2021.8", "4.6.0", "2.1.5 (build ...)" -> {2021, 8, 0}, ...; missing parts are 0.
Version parse_library_version(std::string_view text);

// Fills library.path (and notes a static link) from where the dynamic linker found it.
void locate_library(LibraryVersion& library, const std::optional<LoadedObject>& object);

}  // namespace conveyor::detail
