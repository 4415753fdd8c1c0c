// PipelineOptions::cpus: the threads that run a pipeline's maps run on the CPUs given, and cpu_share gives
// each of several pipelines of one host a contiguous share of the CPUs (issue 36: every GPU of a host).
#include "src/pipeline/worker_affinity.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::numbered_memory;

// The CPUs every thread that ran the map was allowed on while it ran, and the threads.
struct Seen {
  std::set<std::vector<int>> allowed;
  std::set<pid_t> threads;
};
Seen affinity_of_map_threads(const Dataset& dataset) {
  std::mutex mutex;
  Seen seen;
  const Dataset recorded = dataset.map("record affinity", [&](Sample&) {
    const std::vector<int> cpus = detail::this_threads_cpus();
    std::lock_guard lock(mutex);
    seen.allowed.insert(cpus);
    seen.threads.insert(::gettid());
  });
  std::size_t count = 0;
  for (const Sample& sample : recorded) {
    static_cast<void>(sample);
    ++count;
  }
  EXPECT_EQ(count, 64u);
  return seen;
}

TEST(WorkerAffinity, EveryThreadThatRunsTheMapsRunsOnTheCpusGiven) {
  const std::vector<int> mine = detail::this_threads_cpus();
  ASSERT_FALSE(mine.empty());
  const std::vector<int> given{mine.back()};
  const Seen seen = affinity_of_map_threads(numbered_memory(64).with_options({.threads = 3, .cpus = given}));
  ASSERT_FALSE(seen.allowed.empty());
  for (const std::vector<int>& allowed : seen.allowed) EXPECT_EQ(allowed, given);
  EXPECT_EQ(detail::this_threads_cpus(), mine) << "the consumer's thread keeps its own CPUs";
}

TEST(WorkerAffinity, AThreadThatMovesToAnotherPipelineTakesThatPipelinesCpus) {
  const std::vector<int> mine = detail::this_threads_cpus();
  if (mine.size() < 2) GTEST_SKIP() << "one CPU: no two sets to move between";
  const std::vector<int> first{mine.front()}, second{mine.back()};
  for (const std::vector<int>& cpus : {first, second, first}) {
    const Seen seen = affinity_of_map_threads(numbered_memory(64).with_options({.threads = 2, .cpus = cpus}));
    for (const std::vector<int>& allowed : seen.allowed) EXPECT_EQ(allowed, cpus);
  }
  // The same oneTBB workers, for a pipeline that asked for no CPUs: wherever they ran before.
  const Seen anywhere = affinity_of_map_threads(numbered_memory(64).with_options({.threads = 2}));
  for (const std::vector<int>& allowed : anywhere.allowed) EXPECT_EQ(allowed, mine);
}

TEST(WorkerAffinity, WithoutThreadsGivenThePipelineTakesOneThreadPerCpu) {
  const std::vector<int> mine = detail::this_threads_cpus();
  const std::vector<int> given{mine.front()};
  SampleIterator it = numbered_memory(16).with_options({.cpus = given}).begin();
  while (it.next()) {
  }
  EXPECT_EQ(it.stats().threads, 1);
}

TEST(WorkerAffinity, CpusOutsideTheKernelsSetOrGivenTwiceAreRefused) {
  EXPECT_THROW(numbered_memory(4).with_options({.cpus = std::vector<int>{-1}}), InvalidArgument);
  EXPECT_THROW(numbered_memory(4).with_options({.cpus = std::vector<int>{0, 0}}), InvalidArgument);
  EXPECT_THROW(numbered_memory(4).with_options({.cpus = std::vector<int>{1 << 20}}), InvalidArgument);
}

TEST(CpuShare, SharesAreContiguousNearEqualAndCoverEveryCpu) {
  const std::vector<int> cpus{0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<int> covered;
  for (int part = 0; part < 3; ++part) {
    const std::vector<int> share = detail::share_of_cpus(cpus, part, 3);
    EXPECT_TRUE(share.size() == 3 || share.size() == 4) << "part " << part;
    for (std::size_t i = 1; i < share.size(); ++i) EXPECT_EQ(share[i], share[i - 1] + 1) << "part " << part;
    covered.insert(covered.end(), share.begin(), share.end());
  }
  EXPECT_EQ(covered, cpus);
  // Fewer CPUs than parts: one each, in turn.
  EXPECT_EQ(detail::share_of_cpus(std::vector<int>{0, 1}, 1, 4), (std::vector<int>{1}));
  EXPECT_EQ(detail::share_of_cpus(std::vector<int>{0, 1}, 2, 4), (std::vector<int>{0}));
  EXPECT_THROW(detail::share_of_cpus(cpus, 3, 3), InvalidArgument);
}

TEST(CpuShare, TheHostsCpusSplitOverItsRanks) {
  const std::vector<int> mine = detail::this_threads_cpus();
  std::size_t total = 0;
  for (int part = 0; part < 2; ++part) total += cpu_share(part, 2).size();
  EXPECT_EQ(total, mine.size() >= 2 ? mine.size() : 2 * mine.size());
}

}  // namespace
}  // namespace conveyor
