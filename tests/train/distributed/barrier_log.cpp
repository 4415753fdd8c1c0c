#include "barrier_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>

namespace conveyor::testing {

void expect_barriers_held(const std::string& log, int world) {
  std::ifstream in(log);
  std::map<int, int> entered, left, first_leave, last_enter;
  std::string what;
  int rank = 0, k = 0, line = 0;
  while (in >> what >> rank >> k) {
    ++line;
    if (what == "enter") {
      ++entered[k];
      last_enter[k] = line;
    } else {
      ++left[k];
      if (!first_leave.count(k)) first_leave[k] = line;
    }
  }
  for (int barrier = 1; barrier <= 3; ++barrier) {
    EXPECT_EQ(entered[barrier], world) << "barrier " << barrier;
    EXPECT_EQ(left[barrier], world) << "barrier " << barrier;
    EXPECT_LT(last_enter[barrier], first_leave[barrier]) << "a rank left barrier " << barrier << " early";
  }
}

}  // namespace conveyor::testing
