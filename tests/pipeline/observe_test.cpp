// Observability: PipelineStats from a running iterator, and the Chrome trace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/trace.h"
#include "fixtures.h"
#include "support/temp_dir.h"

namespace conveyor {
namespace {

using testing::fill_from_seed;
using testing::numbered_memory;

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

// The events of a parsed trace whose "name" and "ph" are these.
std::vector<nlohmann::json> events_named(const nlohmann::json& trace, std::string_view name,
                                         std::string_view phase) {
  std::vector<nlohmann::json> found;
  for (const nlohmann::json& event : trace.at("traceEvents"))
    if (event.at("name") == name && event.at("ph") == phase) found.push_back(event);
  return found;
}

// The tid of the track shown as `name`, from its "thread_name" metadata event; -1 when there is none.
int track_id(const nlohmann::json& trace, std::string_view name) {
  for (const nlohmann::json& event : events_named(trace, "thread_name", "M"))
    if (event.at("args").at("name") == name) return event.at("tid").get<int>();
  return -1;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);  // throws on anything that is not JSON
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
  const nlohmann::json json = nlohmann::json::parse(trace->json());
  EXPECT_EQ(json.at("displayTimeUnit"), "ms");
  EXPECT_EQ(events_named(json, "fill", "X").size(), 20u);
  EXPECT_EQ(events_named(json, "read", "X").size(), 20u);
  EXPECT_EQ(events_named(json, "collect", "X").size(), 20u);
  EXPECT_GE(track_id(json, "consumer"), 0);
  EXPECT_GE(track_id(json, "worker 0"), 0);
  for (const nlohmann::json& fill : events_named(json, "fill", "X")) {
    EXPECT_NE(fill.at("tid"), track_id(json, "consumer")) << fill;  // stages run on worker tracks
    EXPECT_GE(fill.at("dur").get<double>(), 0.0) << fill;
  }
  const auto depth = events_named(json, "batches ready", "C");
  EXPECT_GE(depth.size(), 8u);  // a push and a pop per batch
  for (const nlohmann::json& counter : depth)
    EXPECT_TRUE(counter.at("args").at("value").is_number()) << counter;
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
  const nlohmann::json json = read_json(dir / "trace.json");
  EXPECT_EQ(track_id(json, "training step"), step);
  const auto forward = events_named(json, "forward \"fp32\"", "X");
  ASSERT_EQ(forward.size(), 1u);
  EXPECT_EQ(forward[0].at("tid"), step);
  EXPECT_DOUBLE_EQ(forward[0].at("dur").get<double>(), 1500.0);  // microseconds
  EXPECT_GE(forward[0].at("ts").get<double>(), 0.0);
  EXPECT_EQ(events_named(json, "backward", "X").size(), 1u);
  const auto loss = events_named(json, "loss", "C");
  ASSERT_EQ(loss.size(), 1u);
  EXPECT_EQ(loss[0].at("args").at("value"), 2.5);
  const auto epoch_end = events_named(json, "epoch end", "i");
  ASSERT_EQ(epoch_end.size(), 1u);
  EXPECT_EQ(epoch_end[0].at("tid"), step);
  EXPECT_THROW(trace.write_json(dir / "no" / "such" / "dir.json"), IoError);
}

TEST(Trace, StaysValidJsonWithNonFiniteCountersAndNamesCutInsideACharacter) {
  TraceRecorder trace;
  const int track = trace.track("t");
  const auto t = TraceRecorder::now();
  trace.counter("nan", t, std::numeric_limits<double>::quiet_NaN());
  trace.counter("inf", t, std::numeric_limits<double>::infinity());
  // "é" is two bytes in UTF-8; the cut at kMaxNameLength falls between them.
  const std::string name = std::string(TraceRecorder::kMaxNameLength - 1, 'a') + "\xc3\xa9";
  trace.complete(track, name, t, t);
  const nlohmann::json json = nlohmann::json::parse(trace.json());
  EXPECT_TRUE(events_named(json, "nan", "C").at(0).at("args").at("value").is_null());
  EXPECT_TRUE(events_named(json, "inf", "C").at(0).at("args").at("value").is_null());
  const std::string cut = std::string(TraceRecorder::kMaxNameLength - 1, 'a') + "\xef\xbf\xbd";  // U+FFFD
  EXPECT_EQ(events_named(json, cut, "X").size(), 1u);
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
