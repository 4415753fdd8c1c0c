// The pipeline's watchdog: an element that stays in one stage longer than stall_limit is reported (stats,
// trace, callback) with its stage, path, time and thread; under on_error = skip with abandon_stalled it is
// given up and its batch goes on without it. The slow ops below sleep or block on a gate the test opens;
// the test itself never sleeps to wait for anything.
#include "support/watchdog.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/trace.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using testing::fill_from_seed;
using testing::number_of;
using testing::numbered_memory;

constexpr ImageShape kShape{2, 2, 3};

// Holds the element it is given until open() (a read that hangs until the network comes back).
class Gate {
 public:
  void wait() {
    std::unique_lock lock(mutex_);
    opened_.wait(lock, [&] { return open_; });
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    opened_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable opened_;
  bool open_ = false;
};

// Collects the watchdog's callbacks (they come on its own thread).
class Reports {
 public:
  std::function<void(const StallReport&)> callback() {
    return [this](const StallReport& report) {
      std::lock_guard lock(mutex_);
      reports_.push_back(report);
    };
  }
  std::vector<StallReport> all() {
    std::lock_guard lock(mutex_);
    return reports_;
  }

 private:
  std::mutex mutex_;
  std::vector<StallReport> reports_;
};

std::vector<std::uint64_t> labels_of(BatchIterator& it) {
  std::vector<std::uint64_t> labels;
  while (std::optional<Batch> batch = it.next())
    for (const std::int64_t label : batch->labels()) labels.push_back(static_cast<std::uint64_t>(label));
  return labels;
}

TEST(Watchdog, AnElementStuckInAStageIsReportedWithItsStagePathTimeAndThread) {
  const testing::Watchdog guard(60s, "watchdog report");
  const testing::TempDir dir;
  auto trace = std::make_shared<TraceRecorder>();
  Reports reports;
  BatchIterator it =
      numbered_memory(24, 1000)
          .map(fill_from_seed(kShape))
          .map("slow",
               [](Sample& sample) {
                 if (number_of(sample) == 5) std::this_thread::sleep_for(1500ms);
               })
          .with_options({.threads = 3, .trace = trace, .stall_limit = 300ms, .on_stall = reports.callback()})
          .batch(4)
          .begin();
  std::vector<std::uint64_t> labels = labels_of(it);
  EXPECT_EQ(labels.size(), 24u);  // reported, not dropped: on_error is fail
  const PipelineStats stats = it.stats();
  // On a loaded machine another element may be descheduled past the limit too: look for element 5's.
  std::vector<StallReport> fives;
  for (const StallReport& r : stats.stall_reports)
    if (r.path == "<memory:5>") fives.push_back(r);
  ASSERT_EQ(fives.size(), 1u);
  EXPECT_EQ(stats.stalls, stats.stall_reports.size());
  EXPECT_EQ(stats.abandoned, 0u);
  const StallReport& report = fives.front();
  EXPECT_EQ(report.stage, "slow");
  EXPECT_EQ(report.index, 5u);
  EXPECT_GE(report.elapsed, 300ms);
  EXPECT_GE(report.worker, 0);
  EXPECT_GT(report.thread_id, 0u);
  EXPECT_FALSE(report.abandoned);
  int called = 0;
  for (const StallReport& r : reports.all()) called += r.path == "<memory:5>";
  EXPECT_EQ(called, 1);
  EXPECT_NE(format_stats(stats).find("in 'slow' on worker"), std::string::npos);

  trace->write_json(dir / "trace.json");
  std::ifstream in(dir / "trace.json");
  const nlohmann::json events = nlohmann::json::parse(in).at("traceEvents");
  int watchdog_track = -1, instants = 0;
  for (const auto& e : events)
    if (e.value("ph", "") == "M" && e.at("args").value("name", "") == "watchdog")
      watchdog_track = e.at("tid");
  for (const auto& e : events)
    if (e.value("ph", "") == "i" && e.value("tid", -2) == watchdog_track &&
        e.value("name", "") == "stalled in slow: <memory:5>")
      ++instants;
  EXPECT_GE(watchdog_track, 0);
  EXPECT_EQ(instants, 1);
}

TEST(Watchdog, ElementsQuickerThanTheLimitAreNotReported) {
  const testing::Watchdog guard(60s, "watchdog quiet");
  Reports reports;
  BatchIterator it = numbered_memory(40)
                         .map(fill_from_seed(kShape))
                         .map("brief", [](Sample&) { std::this_thread::sleep_for(2ms); })
                         .with_options({.threads = 2, .stall_limit = 5s, .on_stall = reports.callback()})
                         .batch(8)
                         .begin();
  EXPECT_EQ(labels_of(it).size(), 40u);
  EXPECT_EQ(it.stats().stalls, 0u);
  EXPECT_TRUE(reports.all().empty());
}

TEST(Watchdog, UnderSkipAStuckElementIsAbandonedAndTheBatchesGoOnWithoutIt) {
  const testing::Watchdog guard(60s, "watchdog abandon");
  Gate gate;
  const auto chain = [&](Dataset d) {
    return d.map(fill_from_seed(kShape))
        .map("read from a dead server",
             [&gate](Sample& sample) {
               if (number_of(sample) == 5) gate.wait();
             })
        .with_options({.threads = 3,
                       .on_error = OnError::skip,
                       .seed = 4,
                       .stall_limit = 500ms,
                       .abandon_stalled = true});
  };
  // The reference: the same run with element 5 filtered out before it reaches the gate.
  BatchChecksum expected, got;
  std::vector<std::uint64_t> expected_labels;
  for (const Batch& batch :
       chain(numbered_memory(30, 1000).filter([](const Sample& s) { return number_of(s) != 5; })).batch(4)) {
    expected.add(batch);
    for (const std::int64_t label : batch.labels())
      expected_labels.push_back(static_cast<std::uint64_t>(label));
  }
  {
    BatchIterator it = chain(numbered_memory(30, 1000)).batch(4).begin();
    std::vector<std::uint64_t> labels;
    // Every batch arrives while element 5 is still stuck at the gate.
    while (std::optional<Batch> batch = it.next()) {
      got.add(*batch);
      for (const std::int64_t label : batch->labels()) labels.push_back(static_cast<std::uint64_t>(label));
    }
    EXPECT_EQ(labels, expected_labels);
    EXPECT_EQ(got.value(), expected.value());  // the same bytes: nothing of the stuck element leaked in
    const PipelineStats stats = it.stats();
    EXPECT_EQ(stats.stalls, 1u);
    EXPECT_EQ(stats.abandoned, 1u);
    EXPECT_EQ(stats.skipped, 1u);
    EXPECT_EQ(stats.skip_reasons.at("read from a dead server: stalled"), 1u);
    ASSERT_EQ(stats.stall_reports.size(), 1u);
    EXPECT_TRUE(stats.stall_reports.front().abandoned);
    gate.open();  // the destructor waits for the stuck op to return
  }
}

TEST(Watchdog, AbandonedSamplesAreLeftOutOfASampleIteratorToo) {
  const testing::Watchdog guard(60s, "watchdog abandon samples");
  Gate gate;
  SampleIterator it =
      numbered_memory(12)
          .map("stuck",
               [&gate](Sample& sample) {
                 if (number_of(sample) == 3) gate.wait();
               })
          .with_options(
              {.threads = 2, .on_error = OnError::skip, .stall_limit = 500ms, .abandon_stalled = true})
          .begin();
  std::vector<std::uint64_t> numbers;
  while (std::optional<Sample> sample = it.next()) numbers.push_back(number_of(*sample));
  EXPECT_EQ(numbers, (std::vector<std::uint64_t>{0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(it.stats().abandoned, 1u);
  gate.open();
}

}  // namespace
}  // namespace conveyor
