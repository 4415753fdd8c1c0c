// The version of a library as compiled against and as actually loaded, with the file it came from:
// each wing of conveyor reports its own libraries (this one: libjpeg-turbo, oneTBB, OpenCV; the device
// wing adds CUDA, the training wing cuDNN and cuBLAS: conveyor/cuda/device.h, conveyor/train/trainer.h).
#pragma once

#include <compare>
#include <string>
#include <vector>

namespace conveyor {

// A library version as major.minor.patch; all zero when unknown or absent.
struct Version {
  int major = 0, minor = 0, patch = 0;
  bool known() const noexcept { return major != 0 || minor != 0 || patch != 0; }
  std::string to_string() const;                                      // "13.0.0", "unknown" when not known
  friend auto operator<=>(const Version&, const Version&) = default;  // NOLINT(modernize-use-nullptr)
};

// One library: the version the build was compiled against, the one actually loaded at run time, and the
// file it was loaded from (empty when it cannot be told, e.g. linked statically into the program).
struct LibraryVersion {
  std::string name;
  Version compiled;
  Version loaded;
  std::string path;
  std::string detail;  // extra facts in words ("build 20230203", "built for CUDA 13.1", ...)
};

// libjpeg-turbo, oneTBB and OpenCV as this process has them loaded.
std::vector<LibraryVersion> data_library_versions();

}  // namespace conveyor
