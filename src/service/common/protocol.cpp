#include "src/service/common/protocol.h"

namespace conveyor::service::detail {

std::string describe_protocol(std::uint32_t protocol, const std::string& version) {
  return "protocol " + std::to_string(protocol) + " (conveyor " + (version.empty() ? "?" : version) + ")";
}

}  // namespace conveyor::service::detail
