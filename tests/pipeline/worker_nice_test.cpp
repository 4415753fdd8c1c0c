// PipelineOptions::worker_nice: the threads that run a pipeline's maps take the nice value asked for, so
// that a consumer's threads get a core first; the consumer's own thread keeps its priority. (Lowering a
// nice value needs privilege: these tests only compare with values raised from this thread's own.)
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "fixtures.h"

namespace conveyor {
namespace {

using testing::numbered_memory;

int nice_of_this_thread() {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  EXPECT_EQ(errno, 0);
  return nice;
}

// The nice value of every thread that ran the map, by thread id. Each element sleeps a little, so that
// several of the arena's threads take part.
std::map<pid_t, int> nice_of_map_threads(const Dataset& dataset) {
  std::mutex mutex;
  std::map<pid_t, int> seen;
  const Dataset recorded = dataset.map("record nice", [&](Sample&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const int nice = nice_of_this_thread();
    std::lock_guard lock(mutex);
    seen[::gettid()] = nice;
  });
  std::size_t count = 0;
  for (const Sample& sample : recorded) {
    static_cast<void>(sample);
    ++count;
  }
  EXPECT_EQ(count, 48u);
  return seen;
}

TEST(WorkerNice, EveryThreadThatRunsTheMapsTakesTheValueAsked) {
  const int mine = nice_of_this_thread();
  const int asked = std::max(mine, 7);  // a process that runs niced already keeps its higher value
  const std::map<pid_t, int> seen =
      nice_of_map_threads(numbered_memory(48).with_options({.threads = 4, .worker_nice = 7}));
  ASSERT_GE(seen.size(), 2u) << "several of the arena's threads should have run the map";
  // At least the value asked for: a oneTBB worker that an earlier pipeline of this process (another test
  // in the same run, at the default 10) raised further keeps that value, being unable to lower it.
  for (const auto& [thread, nice] : seen) EXPECT_GE(nice, asked) << "thread " << thread;
  EXPECT_EQ(seen.count(::gettid()), 0u) << "the consumer's thread runs no map";
  EXPECT_EQ(nice_of_this_thread(), mine) << "the consumer's thread keeps its priority";
}

TEST(WorkerNice, WithOneThreadTheDriverThreadTakesIt) {
  const int mine = nice_of_this_thread();
  const std::map<pid_t, int> seen =
      nice_of_map_threads(numbered_memory(48).with_options({.threads = 1, .worker_nice = 5}));
  ASSERT_EQ(seen.size(), 1u) << "one thread: the pipeline's driver";
  EXPECT_EQ(seen.begin()->second, std::max(mine, 5));
  EXPECT_EQ(nice_of_this_thread(), mine);
}

TEST(WorkerNice, ZeroLeavesTheProcesssPriority) {
  // One thread: the driver, a new thread each time, starts at this thread's value (a oneTBB worker may
  // keep a value an earlier pipeline of this process gave it, which an unprivileged process cannot undo).
  const int mine = nice_of_this_thread();
  const std::map<pid_t, int> seen =
      nice_of_map_threads(numbered_memory(48).with_options({.threads = 1, .worker_nice = 0}));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen.begin()->second, mine);
}

TEST(WorkerNice, TheDefaultIsTenAndWithOptionsKeepsItUnlessNamed) {
  EXPECT_EQ(PipelineOptions{}.worker_nice, 10);
  const Dataset set = numbered_memory(4).with_options({.worker_nice = 3});
  EXPECT_EQ(set.with_options({.threads = 2}).options().worker_nice, 3);
  EXPECT_EQ(set.with_options({.worker_nice = 0}).options().worker_nice, 0);
}

TEST(WorkerNice, OutsideZeroToNineteenIsAnInvalidArgumentNamingTheOption) {
  for (const int nice : {-1, 20}) {
    try {
      static_cast<void>(numbered_memory(4).with_options({.worker_nice = nice}));
      ADD_FAILURE() << "worker_nice " << nice << " was accepted";
    } catch (const InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find("worker_nice must be 0-19"), std::string::npos)
          << error.what();
    }
  }
}

}  // namespace
}  // namespace conveyor
