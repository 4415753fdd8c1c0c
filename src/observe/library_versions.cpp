// Versions the data wing's libraries were compiled against (macros) next to the ones actually loaded (asked
// at run time), and where each loaded library lives: a mismatch between the two is the classic cause of
// "works on my machine".
#include "conveyor/library_version.h"

// jpeglib.h needs size_t and FILE declared before it.
#include <cstddef>
#include <cstdio>
// clang-format off
#include <jpeglib.h>
// clang-format on

#include <oneapi/tbb/version.h>
#include <turbojpeg.h>

#include <charconv>
#include <opencv2/core/utility.hpp>
#include <opencv2/core/version.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "src/observe/library_version_support.h"
#include "src/observe/loaded_object.h"

namespace conveyor {
namespace {

LibraryVersion libjpeg_turbo_version() {
  constexpr int number = LIBJPEG_TURBO_VERSION_NUMBER;  // 1000000 * major + 1000 * minor + patch
  LibraryVersion library{
      "libjpeg-turbo", {number / 1000000, number / 1000 % 1000, number % 1000}, {}, {}, {}};
  // TurboJPEG 2.x exports no version function, but every build embeds the text
  // "libjpeg-turbo version X.Y.Z (build YYYYMMDD)": read it from the library actually mapped.
  const auto object =
      detail::object_defining("tjInitDecompress", reinterpret_cast<const void*>(&tjInitDecompress));
  if (object) {
    const std::string prefix = "libjpeg-turbo version ";
    if (auto text = detail::find_text_in_object(object->address, prefix, ')')) {
      library.loaded = detail::parse_library_version(std::string_view(*text).substr(prefix.size()));
      if (const auto build = text->find("(build "); build != std::string::npos)
        library.detail = text->substr(build + 1);
    }
  }
  detail::locate_library(library, object);
  return library;
}

LibraryVersion tbb_version() {
  LibraryVersion library{"oneTBB",
                         {TBB_VERSION_MAJOR, TBB_VERSION_MINOR, TBB_VERSION_PATCH},
                         detail::parse_library_version(TBB_runtime_version()),
                         {},
                         {}};
  library.detail = "interface " + std::to_string(TBB_runtime_interface_version());
  detail::locate_library(
      library,
      detail::object_defining("TBB_runtime_version", reinterpret_cast<const void*>(&TBB_runtime_version)));
  return library;
}

LibraryVersion opencv_version() {
  LibraryVersion library{"OpenCV",
                         {CV_VERSION_MAJOR, CV_VERSION_MINOR, CV_VERSION_REVISION},
                         detail::parse_library_version(cv::getVersionString()),
                         {},
                         {}};
  // OpenCV's functions are C++ (mangled names): find the library by file name instead of by symbol.
  if (auto object = detail::object_named("libopencv_core"))
    detail::locate_library(library, object);
  else
    library.detail = "linked statically";
  return library;
}

}  // namespace

namespace detail {

Version parse_library_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  const char* at = text.data();
  const char* end = text.data() + text.size();
  for (int& part : parts) {
    const auto [next, error] = std::from_chars(at, end, part);
    if (error != std::errc()) break;
    at = next;
    if (at == end || *at != '.') break;
    ++at;
  }
  return {parts[0], parts[1], parts[2]};
}

void locate_library(LibraryVersion& library, const std::optional<LoadedObject>& object) {
  if (!object) return;
  library.path = object->path;
  if (object->real_path != object->path) library.path += " -> " + object->real_path;
  if (object->is_program)
    library.detail += (library.detail.empty() ? "" : ", ") + std::string("linked statically");
}

}  // namespace detail

std::string Version::to_string() const {
  if (!known()) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::vector<LibraryVersion> data_library_versions() {
  return {libjpeg_turbo_version(), tbb_version(), opencv_version()};
}

}  // namespace conveyor
