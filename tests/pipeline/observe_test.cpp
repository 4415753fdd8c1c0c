// Observability: PipelineStats from a running iterator, and the Chrome trace.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/trace.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::numbered_memory;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Stats, CountEveryStageAndWhatWasDelivered) {
  BatchIterator it = numbered_memory(30)
                         .map(fill_from_seed({4, 4, 3}, "fill"))
                         .filter("odd", [](const Sample& s) { return testing::number_of(s) % 2 == 1; })
                         .with_options({.threads = 2, .max_in_flight = 6})
                         .batch(4)
                         .prefetch(3)
                         .begin();
  std::size_t delivered = 0;
  while (std::optional<Batch> batch = it.next()) delivered += batch->size();
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.threads, 2);
  EXPECT_EQ(stats.max_in_flight, 6u);
  EXPECT_EQ(stats.elements_in, 30u);
  EXPECT_EQ(stats.elements_out, delivered);
  EXPECT_EQ(delivered, 15u);
  EXPECT_EQ(stats.batches, 4u);
  EXPECT_EQ(stats.filtered, 15u);
  EXPECT_EQ(stats.skipped, 0u);
  EXPECT_EQ(stats.queue.capacity, 3u);
  EXPECT_EQ(stats.queue.current, 0u);
  EXPECT_GE(stats.queue.max, 1u);
  ASSERT_EQ(stats.stages.size(), 6u);
  const char* names[] = {"source", "read", "fill", "odd", "batch", "collect"};
  const std::uint64_t counts[] = {30, 30, 30, 30, 0, 30};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(stats.stages[i].name, names[i]);
    EXPECT_EQ(stats.stages[i].count, counts[i]) << names[i];
  }
  EXPECT_GT(stats.stages[2].busy_ns, 0u);
  EXPECT_NE(format_stats(stats).find("fill"), std::string::npos);
}

TEST(Stats, CanBeReadWhileThePipelineRuns) {
  BatchIterator it =
      numbered_memory(200).map(fill_from_seed({4, 4, 3})).with_options({.threads = 2}).batch(4).begin();
  std::uint64_t last_in = 0;
  while (std::optional<Batch> batch = it.next()) {
    const PipelineStats stats = it.stats();
    EXPECT_GE(stats.elements_in, last_in);
    EXPECT_GE(stats.elements_in, stats.elements_out);
    last_in = stats.elements_in;
  }
}

TEST(Trace, RecordsStagesOnWorkerTracksTheConsumerAndQueueDepth) {
  auto trace = std::make_shared<TraceRecorder>();
  {
    BatchIterator it = numbered_memory(20)
                           .map(fill_from_seed({4, 4, 3}, "fill"))
                           .with_options({.threads = 2, .trace = trace})
                           .batch(5)
                           .begin();
    while (it.next()) {
    }
  }
  const std::string json = trace->json();
  EXPECT_EQ(json.rfind("{\"displayTimeUnit\"", 0), 0u);
  EXPECT_EQ(count(json, "\"name\":\"fill\",\"ph\":\"X\""), 20u);
  EXPECT_EQ(count(json, "\"name\":\"read\",\"ph\":\"X\""), 20u);
  EXPECT_EQ(count(json, "\"name\":\"collect\",\"ph\":\"X\""), 20u);
  EXPECT_NE(json.find("\"args\":{\"name\":\"consumer\"}"), std::string::npos);
  EXPECT_NE(json.find("\"args\":{\"name\":\"worker 0\"}"), std::string::npos);
  EXPECT_GE(count(json, "\"name\":\"batches ready\",\"ph\":\"C\""), 8u);  // a push and a pop per batch
  EXPECT_EQ(trace->dropped(), 0u);
}

TEST(Trace, OtherCodeAddsItsOwnTracksAndEvents) {
  TraceRecorder trace;
  const int step = trace.track("training step");
  const auto t0 = TraceRecorder::now();
  trace.complete(step, "forward \"fp32\"", t0, t0 + std::chrono::microseconds(1500));
  { TraceScope scope(&trace, step, "backward"); }
  trace.counter("loss", t0, 2.5);
  trace.instant(step, "epoch end", t0);
  EXPECT_EQ(trace.events(), 4u);
  testing::TempDir dir;
  trace.write_json(dir / "trace.json");
  std::ifstream in(dir / "trace.json");
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  EXPECT_NE(json.find("\"args\":{\"name\":\"training step\"}"), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"forward \\\"fp32\\\"\",\"ph\":\"X\""), std::string::npos);
  EXPECT_NE(json.find("\"dur\":1500.000"), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"loss\",\"ph\":\"C\""), std::string::npos);
  EXPECT_NE(json.find("\"args\":{\"value\":2.5}"), std::string::npos);
  EXPECT_THROW(trace.write_json(dir / "no" / "such" / "dir.json"), IoError);
}

TEST(Trace, AFullTrackDropsAndCountsInsteadOfGrowing) {
  TraceRecorder trace(3);
  const int track = trace.track("t");
  const auto t = TraceRecorder::now();
  for (int i = 0; i < 5; ++i) trace.complete(track, "e", t, t);
  EXPECT_EQ(trace.events(), 3u);
  EXPECT_EQ(trace.dropped(), 2u);
  trace.complete(99, "no such track", t, t);  // ignored
  EXPECT_EQ(trace.events(), 3u);
  TraceScope nothing(nullptr, 0, "no recorder");
}

}  // namespace
}  // namespace conveyor
