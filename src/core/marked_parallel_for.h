// tbb::parallel_for over a blocked range with its fork and join marked for ThreadSanitizer (ForkJoin,
// src/core/tsan.h): what the caller did before the loop happens before every iteration, and every iteration
// before what the caller does after it. The CPU layers' loops and the index of shards read at random use it.
#pragma once

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "src/core/tsan.h"

namespace conveyor::detail {

// The body oneTBB copies into each task it splits off, on the thread that splits the range, and hands to the
// thread that steals the task through libtbb, which TSan cannot see. Reading this copy's two pointers is the
// one access that comes before the iteration can acquire the fork; tests/tsan.supp covers it by this file's
// name (race_top), so a race in `body`, whose own code is on top of such a report, is still reported.
template <class Body>
class MarkedRanges {
 public:
  MarkedRanges(const ForkJoin& fork_join, Body& body) : fork_join_(&fork_join), body_(&body) {}
  void operator()(const tbb::blocked_range<std::size_t>& range) const {
    fork_join_->begin_iteration();
    (*body_)(range.begin(), range.end());
    fork_join_->end_iteration();
  }

 private:
  const ForkJoin* fork_join_;
  Body* body_;
};

// Calls body(begin, end) on disjoint ranges covering [0, count) of at least `grain` items, in parallel. The
// body must not throw (an iteration that throws never marks its end): catch inside it.
template <class Body>
void marked_parallel_for(std::size_t count, std::size_t grain, Body&& body) {
  if (count == 0) return;
  const ForkJoin fork_join;
  const MarkedRanges<std::remove_reference_t<Body>> ranges(fork_join, body);
  fork_join.fork();
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, std::max<std::size_t>(grain, 1)), ranges);
}

}  // namespace conveyor::detail
