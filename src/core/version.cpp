#include "conveyor/version.h"

namespace conveyor {

const char* library_version() noexcept { return CONVEYOR_VERSION_STRING; }

}  // namespace conveyor
