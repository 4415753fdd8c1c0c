// The log rendezvous_peer writes ("enter RANK K" and "leave RANK K" lines, one process per rank appending),
// checked by the rendezvous and launcher tests.
#pragma once

#include <string>

namespace conveyor::testing {

// Every "enter * K" line comes before every "leave * K" line, and each of `world` ranks entered and left
// barriers 1, 2 and 3 (gtest expectations).
void expect_barriers_held(const std::string& log, int world);

}  // namespace conveyor::testing
