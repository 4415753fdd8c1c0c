#include "support/permissions.h"

#include <cstdlib>
#include <string_view>

namespace conveyor::testing {

bool permission_tests_required() {
  const char* value = std::getenv("CONVEYOR_REQUIRE_PERMISSION_TESTS");
  return value != nullptr && std::string_view(value) != "" && std::string_view(value) != "0";
}

}  // namespace conveyor::testing
