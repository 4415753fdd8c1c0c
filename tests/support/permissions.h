// Tests of permission-denied paths cannot deny anything to root, which reads every file. They skip then,
// unless CONVEYOR_REQUIRE_PERMISSION_TESTS is set: tests/support/run_unprivileged.sh sets it when it runs a
// test program as an unprivileged user, and there a skip would hide that the denied path never ran.
#pragma once

namespace conveyor::testing {

// True when CONVEYOR_REQUIRE_PERMISSION_TESTS is set to anything but "" or "0".
bool permission_tests_required();

}  // namespace conveyor::testing
