// Which file a piece of loaded code came from, asked of the dynamic linker: the way to tell the library
// version actually running from the one the build was compiled against.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace conveyor::detail {

struct LoadedObject {
  std::string path;               // as the loader opened it ("/usr/lib/x86_64-linux-gnu/libturbojpeg.so.0")
  std::string real_path;          // symlinks resolved ("/usr/lib/x86_64-linux-gnu/libturbojpeg.so.0.2.0")
  bool is_program = false;        // the code is linked into the program itself (static linking)
  const void* address = nullptr;  // where the looked-up symbol lives (object_defining only)
};

// The object that holds the exported C function `symbol` (looked up with dlsym), or the object that holds
// `fallback` when the symbol is not exported (a static link). nullopt when neither can be found.
std::optional<LoadedObject> object_defining(const char* symbol, const void* fallback);

// The first loaded shared object whose file name contains `fragment` ("libcuda.so", "libopencv_core").
std::optional<LoadedObject> object_named(std::string_view fragment);

// Searches the read-only memory of the loaded object that contains `address` for text starting with
// `prefix` and returns it up to (not including) `terminator` or the end of the string. Libraries embed
// their version this way ("libjpeg-turbo version 2.1.5 (build 20230203)") when they export no function
// that returns it.
std::optional<std::string> find_text_in_object(const void* address, std::string_view prefix, char terminator);

}  // namespace conveyor::detail
