// The training wing's libraries (cuDNN and cuBLAS where it was built with CUDA) added to the device wing's
// version report.
#include "conveyor/train/library_versions.h"

#include "src/train/backend.h"

namespace conveyor::train {

LibraryVersions library_versions() {
  LibraryVersions versions = conveyor::library_versions();
  add_backend_library_versions(versions);
  return versions;
}

}  // namespace conveyor::train
