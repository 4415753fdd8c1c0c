// Which slots of a batch cross to the device when the deferred samples' slots are left out of the copy
// (src/device/decode/decoded_runs.h, DeviceDecode::copy_whole_batch off). Runs without a GPU.
#include "src/device/decode/decoded_runs.h"

#include <gtest/gtest.h>

#include <vector>

#include "src/device/decode/decode_split.h"

namespace conveyor::detail {
namespace {

std::vector<SampleInfo> with_deferred(std::initializer_list<bool> deferred) {
  std::vector<SampleInfo> samples;
  for (const bool d : deferred) samples.push_back({.index = samples.size(), .deferred = d});
  return samples;
}

TEST(DecodedRuns, ConsecutiveDecodedSamplesMakeOneRun) {
  std::vector<SampleRun> runs;
  decoded_runs(with_deferred({false, false, true, false, true, true, false, false, false}), 9, runs);
  EXPECT_EQ(runs, (std::vector<SampleRun>{{0, 2}, {3, 1}, {6, 3}}));
}

TEST(DecodedRuns, ABatchWithoutDeferredSamplesIsOneRunAndOneWithOnlyDeferredOnesNone) {
  std::vector<SampleRun> runs;
  decoded_runs(with_deferred({false, false, false, false}), 4, runs);
  EXPECT_EQ(runs, (std::vector<SampleRun>{{0, 4}}));
  decoded_runs(with_deferred({true, true, true}), 3, runs);
  EXPECT_TRUE(runs.empty()) << "the runs of the batch before were kept";
}

TEST(DecodedRuns, OnlyTheBatchsSamplesCount) {
  // A last, short batch: slots past its size hold nothing to copy.
  std::vector<SampleRun> runs;
  decoded_runs(with_deferred({true, false, false, false, false}), 3, runs);
  EXPECT_EQ(runs, (std::vector<SampleRun>{{1, 2}}));
}

TEST(DecodedRuns, AtTheSplitsShareTheRunsCoverExactlyTheSamplesThePipelineDecoded) {
  // The split's own choice of deferred samples over a batch of 256: every decoded sample is in exactly one
  // run, no deferred one is, and the calls stay few (the batched copy's point).
  for (const double share : {0.1, 0.4, 0.6, 0.9}) {
    const auto q16 = static_cast<std::uint32_t>(share * 65536);
    std::vector<SampleInfo> samples(256);
    std::size_t decoded = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      samples[i].index = 1000 + i;
      samples[i].deferred = defers(samples[i].index, q16);
      decoded += samples[i].deferred ? 0 : 1;
    }
    std::vector<SampleRun> runs;
    decoded_runs(samples, samples.size(), runs);
    std::vector<int> covered(samples.size(), 0);
    for (const SampleRun& run : runs) {
      ASSERT_GE(run.count, 1u);
      for (std::size_t k = run.first; k < run.first + run.count; ++k) ++covered[k];
    }
    std::size_t in_runs = 0;
    for (std::size_t i = 0; i < samples.size(); ++i) {
      EXPECT_EQ(covered[i], samples[i].deferred ? 0 : 1) << "slot " << i << " at share " << share;
      in_runs += static_cast<std::size_t>(covered[i]);
    }
    EXPECT_EQ(in_runs, decoded);
    // About 256 min(s, 1 - s) runs when the deferred samples are spread evenly.
    const double expected = 256 * std::min(share, 1 - share);
    EXPECT_LE(static_cast<double>(runs.size()), expected + 3) << "share " << share;
  }
}

}  // namespace
}  // namespace conveyor::detail
