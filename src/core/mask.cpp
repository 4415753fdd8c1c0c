#include "conveyor/mask.h"

namespace conveyor {

const char* to_string(MaskType type) noexcept { return type == MaskType::uint16 ? "uint16" : "uint8"; }

}  // namespace conveyor
