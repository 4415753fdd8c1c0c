// Issue 41's levers of the hybrid feeder, on a GPU: the decoder comes ready behind the CPU workers (start at
// once), the deferred samples' slots left out of the copy, and nothing but the hardware engines decoding on
// the GPU. Lines starting "[ levers   ]" say what happened. Skips without a GPU or without nvJPEG.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/cuda/stream.h"
#include "conveyor/dataset.h"
#include "conveyor/ops/sample_ops.h"
#include "src/device/cuda_check.h"
#include "src/device/decode/decode_split.h"
#include "src/device/late_locked_memory.h"
#include "src/device/nvjpeg/nvjpeg_library.h"
#include "support/test_images.h"
#include "support/watchdog.h"

namespace conveyor {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kSize = 64;
constexpr ImageShape kShape{kSize, kSize, 3};
constexpr const char* kTest = "feeder_levers_gpu_test";

#define REQUIRE_GPU_AND_NVJPEG()                                      \
  if (list_gpus().empty()) {                                          \
    GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();   \
  }                                                                   \
  if (const nvjpeg::LoadResult loaded = nvjpeg::load(); !loaded) {    \
    GTEST_SKIP() << loaded.unavailable;                               \
  }                                                                   \
  static_assert(true)

Placement gpu() { return resolve(DeviceSpec::parse("gpu:0")); }

// Photos of two shapes; with `progressive`, every ninth one progressive (the hardware engines refuse those).
std::vector<std::vector<std::uint8_t>> photos(int count, bool progressive = false) {
  std::vector<std::vector<std::uint8_t>> out;
  for (int i = 0; i < count; ++i) {
    const bool tall = i % 3 == 0;
    out.push_back(testing::make_jpeg(tall ? 250 : 187, tall ? 166 : 250, 3, 4100 + static_cast<std::uint64_t>(i),
                                     88, progressive && i % 9 == 4));
  }
  return out;
}

FeederOptions hybrid(double share) {
  FeederOptions options;
  options.normalize = ops::NormalizeParams{};
  options.normalize->type = ops::ElementType::bfloat16;
  options.normalize->layout = ops::TensorLayout::hwc;
  options.augment.flip_horizontal = 0.5;
  options.decode.enabled = true;
  options.decode.share = share;
  options.decode.remember_share = false;  // every run starts where it is told to
  return options;
}

std::vector<std::uint8_t> bytes_of(const TensorView& view, cudaStream_t stream) {
  std::vector<std::uint8_t> host(view.bytes());
  CONVEYOR_CUDA(cudaMemcpyAsync(host.data(), view.data, view.bytes(), cudaMemcpyDeviceToHost, stream), kTest);
  CONVEYOR_CUDA(cudaStreamSynchronize(stream), kTest);
  return host;
}

struct FedRun {
  std::vector<std::vector<std::uint8_t>> pixels, images;
  std::vector<std::vector<SampleInfo>> samples;
  FeederStats feeder;
};

// A deterministic pipeline over `files`: the same batches every run.
BatchedDataset deterministic_batches(const std::vector<std::vector<std::uint8_t>>& files) {
  return Dataset::memory(files)
      .map(ops::decode_random_resized_crop(kSize))
      .with_options({.threads = 3, .deterministic = true, .seed = 11})
      .batch(16, kShape);
}

// Every batch of deterministic_batches(files) through a feeder with `options`.
FedRun feed_all(const std::vector<std::vector<std::uint8_t>>& files, const FeederOptions& options) {
  DeviceFeeder feeder(gpu(), options);
  FedRun out;
  auto it = feeder.feed(deterministic_batches(files));
  const cudaStream_t stream = cuda::consumer_stream(feeder);
  while (std::optional<DeviceBatch> batch = it.next()) {
    out.pixels.push_back(bytes_of(batch->pixels(), stream));
    out.images.push_back(bytes_of(batch->images(), stream));
    out.samples.emplace_back(batch->samples().begin(), batch->samples().end());
  }
  feeder.synchronize();
  out.feeder = feeder.stats();
  return out;
}

std::uint64_t count_of(const FeederStats& stats, const std::string& reason) {
  const auto found = stats.fallback_reasons.find(reason);
  return found == stats.fallback_reasons.end() ? 0 : found->second;
}

TEST(FeederStartAtOnce, TheCpuDecodesEverythingUntilTheGpuDecoderIsReadyThenTheSplitOpens) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(240s, "TheCpuDecodesEverythingUntilTheGpuDecoderIsReadyThenTheSplitOpens");
  DeviceFeeder feeder(gpu(), hybrid(0.5));
  const BatchedDataset dataset = Dataset::memory(photos(48))
                                     .repeat()
                                     .map(ops::decode_random_resized_crop(kSize))
                                     .with_options({.threads = 3, .deterministic = false, .seed = 5})
                                     .batch(16, kShape);
  const auto fed = Clock::now();
  auto it = feeder.feed(dataset);
  const double returned = std::chrono::duration<double>(Clock::now() - fed).count();
  std::vector<std::pair<double, std::size_t>> arrivals;  // seconds after feed(), deferred samples
  // Until the split has opened and a batch with GPU-decoded samples came: the decoder's start-up is bounded
  // (the watchdog says otherwise).
  for (;;) {
    std::optional<DeviceBatch> batch = it.next();
    ASSERT_TRUE(batch.has_value()) << "an endless pipeline ended";
    std::size_t deferred = 0;
    for (const SampleInfo& info : batch->samples()) deferred += info.deferred ? 1 : 0;
    arrivals.emplace_back(std::chrono::duration<double>(Clock::now() - fed).count(), deferred);
    if (deferred > 0) break;
  }
  const FeederStats stats = feeder.stats();
  std::cout << "[ levers   ] feed() returned after " << returned << " s; first batch after " << arrivals.front().first
            << " s; " << arrivals.size() << " batches until the first with GPU-decoded samples\n[ levers   ] "
            << stats.startup << "\n[ levers   ] decoder: " << stats.decoder << "\n[ levers   ] warm-up: "
            << stats.warmup << "; first stage() " << stats.first_stage_seconds << " s\n";
  EXPECT_EQ(stats.startup.rfind("at once", 0), 0u) << stats.startup;
  ASSERT_GT(stats.decoder_ready_seconds, 0.0) << "the split never opened";
  // The split opened decoder_ready_seconds after feed() began (measured from a moment inside it): no batch
  // that came before has a deferred sample.
  for (const auto& [seconds, deferred] : arrivals) {
    if (seconds < stats.decoder_ready_seconds) {
      EXPECT_EQ(deferred, 0u) << "a batch " << seconds << " s after feed(), before the decoder was ready at "
                              << stats.decoder_ready_seconds << " s, had samples deferred to the GPU";
    }
  }
  EXPECT_FALSE(stats.warmup.empty()) << "the startup sent no warm-up batch through nvJPEG";
  // Where the decoder's start-up went, phase by phase.
  for (const char* phase : {"library ", "decoder ", "page-locked batch buffers ", "warm-up "})
    EXPECT_NE(stats.startup.find(phase), std::string::npos) << phase << "is not in: " << stats.startup;
}

TEST(FeederStartAtOnce,
     TheSecondDecoderJoinsBehindTheOpenSplitAndEveryGpuDecodedSlotHasTheBytesOfAWarmFeeder) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(300s, "TheSecondDecoderJoinsBehindTheOpenSplit");
  const std::vector<std::vector<std::uint8_t>> files = photos(48);
  const auto dataset = [&](bool deterministic) {
    return Dataset::memory(files)
        .repeat()
        .map(ops::decode_random_resized_crop(kSize))
        .with_options({.threads = 3, .deterministic = deterministic, .seed = 23})
        .batch(16, kShape);
  };
  // At once, the split at 1 once open (not adapting): the first decoder alone, then both in turn.
  FeederOptions options = hybrid(1.0);
  options.decode.adapt = false;
  ASSERT_TRUE(options.decode.open_before_second) << "the default this test is about";
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::uint8_t>> gpu_slots;  // (epoch, index)
  std::uint64_t last_epoch = 0;
  std::size_t after_joining = 0;  // batches with GPU-decoded samples that came after the second joined
  FeederStats stats;
  {
    DeviceFeeder feeder(gpu(), options);
    auto it = feeder.feed(dataset(false));
    const cudaStream_t stream = cuda::consumer_stream(feeder);
    while (after_joining < 8) {
      std::optional<DeviceBatch> batch = it.next();
      ASSERT_TRUE(batch.has_value()) << "an endless pipeline ended";
      // The second decoder had joined when this batch arrived (the ring's few batches decoded before it
      // count too: 8 such batches hold some that the second decoder made).
      const bool joined = feeder.stats().second_decoder_seconds > 0;
      const std::vector<std::uint8_t> pixels = bytes_of(batch->pixels(), stream);
      std::size_t deferred = 0;
      for (std::size_t i = 0; i < batch->size(); ++i) {
        const SampleInfo& info = batch->samples()[i];
        last_epoch = std::max(last_epoch, info.epoch);
        if (!info.deferred) continue;
        ++deferred;
        const auto* slot = pixels.data() + i * kShape.bytes();
        gpu_slots[{info.epoch, info.index}].assign(slot, slot + kShape.bytes());
      }
      if (joined && deferred > 0) ++after_joining;
    }
    stats = feeder.stats();
  }
  std::cout << "[ levers   ] " << stats.startup << "\n[ levers   ] " << stats.warmup
            << "\n[ levers   ] " << gpu_slots.size() << " GPU-decoded samples over " << last_epoch + 1
            << " epochs\n";
  ASSERT_GT(stats.decoder_ready_seconds, 0.0) << "the split never opened";
  EXPECT_GE(stats.second_decoder_seconds, stats.decoder_ready_seconds);
  EXPECT_NE(stats.startup.find("the second decoder joined at"), std::string::npos) << stats.startup;
  EXPECT_NE(stats.warmup.find("the second decoder x"), std::string::npos) << stats.warmup;
  // The same samples from a deterministic pipeline with the same seed through a feeder whose two decoders
  // were made and warmed up front (warmup()): every sample is deferred at share 1, and each slot the at-once
  // run decoded on the GPU, with either decoder, has its bytes.
  DeviceFeeder warm(gpu(), hybrid(1.0));
  warm.warmup(dataset(true));
  auto it = warm.feed(dataset(true));
  const cudaStream_t stream = cuda::consumer_stream(warm);
  std::size_t compared = 0;
  while (compared < gpu_slots.size()) {
    std::optional<DeviceBatch> batch = it.next();
    ASSERT_TRUE(batch.has_value());
    if (batch->samples()[0].epoch > last_epoch) break;
    const std::vector<std::uint8_t> pixels = bytes_of(batch->pixels(), stream);
    for (std::size_t i = 0; i < batch->size(); ++i) {
      const SampleInfo& info = batch->samples()[i];
      const auto found = gpu_slots.find({info.epoch, info.index});
      if (found == gpu_slots.end()) continue;
      ASSERT_TRUE(info.deferred) << "share 1 deferred every sample";
      const auto* slot = pixels.data() + i * kShape.bytes();
      ++compared;
      EXPECT_TRUE(std::equal(slot, slot + kShape.bytes(), found->second.begin()))
          << "epoch " << info.epoch << " sample " << info.index << ": other bytes than the warm feeder's";
    }
  }
  EXPECT_EQ(compared, gpu_slots.size());
}

TEST(FeederStartAtOnce, ADeterministicPipelineDefersFromItsFirstSample) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(180s, "ADeterministicPipelineDefersFromItsFirstSample");
  const FedRun first = feed_all(photos(32), hybrid(0.5));
  std::cout << "[ levers   ] " << first.feeder.startup << "\n";
  EXPECT_NE(first.feeder.startup.find("deterministic"), std::string::npos) << first.feeder.startup;
  ASSERT_FALSE(first.samples.empty());
  // Exactly the samples the split's pure function of the index picks at share 0.5, from the first one.
  std::size_t deferred = 0;
  for (const SampleInfo& info : first.samples.front()) {
    deferred += info.deferred ? 1 : 0;
    EXPECT_EQ(info.deferred, detail::defers(info.index, 1u << 15)) << "sample " << info.index;
  }
  EXPECT_GT(deferred, 0u) << "the first batch of 16 at share 0.5";
}

TEST(FeederCopy, LeavingTheDeferredSlotsOutOfTheCopyChangesNoByte) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(180s, "LeavingTheDeferredSlotsOutOfTheCopyChangesNoByte");
  const std::vector<std::vector<std::uint8_t>> files = photos(64);
  const FedRun whole = feed_all(files, hybrid(0.4));
  FeederOptions options = hybrid(0.4);
  options.decode.copy_whole_batch = false;
  const FedRun decoded_only = feed_all(files, options);
  std::cout << "[ levers   ] bytes left out of the copy: " << decoded_only.feeder.bytes_not_copied << " of "
            << decoded_only.feeder.bytes + decoded_only.feeder.bytes_not_copied << "\n";
  EXPECT_EQ(whole.feeder.bytes_not_copied, 0u);
  EXPECT_GT(decoded_only.feeder.gpu_decoded, 0u);
  // Every deferred slot (kShape bytes each) was left out, nothing else.
  std::uint64_t deferred = 0;
  for (const auto& batch : decoded_only.samples)
    for (const SampleInfo& info : batch) deferred += info.deferred ? 1 : 0;
  EXPECT_EQ(decoded_only.feeder.bytes_not_copied, deferred * kShape.bytes());
  ASSERT_EQ(decoded_only.pixels.size(), whole.pixels.size());
  for (std::size_t k = 0; k < whole.pixels.size(); ++k) {
    EXPECT_EQ(decoded_only.pixels[k], whole.pixels[k]) << "pixels of batch " << k;
    EXPECT_EQ(decoded_only.images[k], whole.images[k]) << "images of batch " << k;
  }
}

TEST(FeederDecodeThreads, TwoThreadsEachSubmittingHalfOfEveryBatchGiveTheBytesOfOne) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(180s, "TwoThreadsEachSubmittingHalfOfEveryBatchGiveTheBytesOfOne");
  // Every ninth progressive: the software path runs on both threads too.
  const std::vector<std::vector<std::uint8_t>> files = photos(96, /*progressive=*/true);
  FeederOptions options = hybrid(0.7);
  options.decode.decode_threads = 1;
  const FedRun one = feed_all(files, options);
  options.decode.decode_threads = 2;
  const FedRun two = feed_all(files, options);
  std::cout << "[ levers   ] GPU-decoded " << two.feeder.gpu_decoded << " with two threads, "
            << one.feeder.gpu_decoded << " with one; paths:";
  for (const auto& [path, count] : two.feeder.gpu_decode_paths) std::cout << " " << path << " " << count;
  std::cout << "\n";
  EXPECT_GT(two.feeder.gpu_decoded, 0u);
  EXPECT_EQ(two.feeder.gpu_decoded, one.feeder.gpu_decoded);
  EXPECT_EQ(two.feeder.gpu_decode_paths, one.feeder.gpu_decode_paths);
  ASSERT_EQ(two.pixels.size(), one.pixels.size());
  for (std::size_t k = 0; k < one.pixels.size(); ++k) {
    EXPECT_EQ(two.pixels[k], one.pixels[k]) << "pixels of batch " << k;
    EXPECT_EQ(two.images[k], one.images[k]) << "images of batch " << k;
  }
}

TEST(FeederGpuHybrid, WithoutItOnlyTheEnginesDecodeOnTheGpuAndTheCpuTakesWhatTheyRefuse) {
  REQUIRE_GPU_AND_NVJPEG();
  const testing::Watchdog watchdog(180s, "WithoutItOnlyTheEnginesDecodeOnTheGpuAndTheCpuTakesWhatTheyRefuse");
  const std::vector<std::vector<std::uint8_t>> files = photos(45, /*progressive=*/true);  // 5 progressive
  FeederOptions options = hybrid(1.0);
  options.decode.gpu_hybrid = false;
  const FedRun engines_only = feed_all(files, options);
  const FeederStats& stats = engines_only.feeder;
  std::cout << "[ levers   ] decoder: " << stats.decoder << "\n";
  for (const auto& [path, count] : stats.gpu_decode_paths) std::cout << "[ levers   ]   " << count << " x " << path << "\n";
  for (const auto& [reason, count] : stats.fallback_reasons) std::cout << "[ levers   ]   " << count << " x " << reason << "\n";
  if (stats.decoder.find("hardware decoder (") == std::string::npos)
    GTEST_SKIP() << "this GPU has no hardware JPEG engines: " << stats.decoder;
  EXPECT_NE(stats.decoder.find("nothing else on the GPU"), std::string::npos) << stats.decoder;
  EXPECT_EQ(count_of(stats, "nvjpeg: engines_refused"), 5u) << "the progressive photos";
  EXPECT_EQ(stats.cpu_fallbacks, 5u);
  EXPECT_EQ(stats.gpu_decoded, 40u);
  for (const auto& [path, count] : stats.gpu_decode_paths)
    EXPECT_EQ(path.rfind("hardware", 0), 0u) << count << " images went nvJPEG's " << path << " path";
  // What the CPU decoded for the feeder is the op's own pixels: the same as a CPU-only run's.
  FeederOptions cpu_only = hybrid(1.0);
  cpu_only.decode.enabled = false;
  const FedRun cpu = feed_all(files, cpu_only);
  ASSERT_EQ(cpu.pixels.size(), engines_only.pixels.size());
  for (std::size_t k = 0; k < cpu.pixels.size(); ++k)
    for (std::size_t i = 0; i < engines_only.samples[k].size(); ++i) {
      if (engines_only.samples[k][i].index % 9 != 4) continue;
      EXPECT_EQ(std::memcmp(engines_only.pixels[k].data() + i * kShape.bytes(),
                            cpu.pixels[k].data() + i * kShape.bytes(), kShape.bytes()),
                0)
          << "progressive sample " << engines_only.samples[k][i].index;
    }
}

// CPU decoding only (with nvJPEG, feed() of a deterministic pipeline makes the decoder, and so waits for the
// context, before the pipeline starts: no block would be taken before the context), the feeder's set-up
// behind the first batch or in its constructor.
FeederOptions cpu_decoding(bool set_up_behind) {
  FeederOptions options = hybrid(0);
  options.decode.enabled = false;
  options.set_up_behind = set_up_behind;
  return options;
}

// Issue 41, start at once: the feeder's CUDA context is made on a thread of its own while the CPU decodes
// the first batch (FeederOptions::set_up_behind), and the batch buffers the pipeline took before it existed
// are page-locked when it comes. The batches must not tell the two ways apart, and none may be copied from
// pageable memory.
TEST(FeederSetUpBehind, GivesTheBatchesOfAFeederSetUpInItsConstructorAllFromPageLockedMemory) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const testing::Watchdog watchdog(180s, "GivesTheBatchesOfAFeederSetUpInItsConstructor");
  const std::vector<std::vector<std::uint8_t>> files = photos(48);
  const FedRun a = feed_all(files, cpu_decoding(true));
  const FedRun b = feed_all(files, cpu_decoding(false));
  std::cout << "[ set-up   ] behind: context and ring in " << a.feeder.device_setup_seconds << " s; batches "
            << a.feeder.host_memory << "\n";
  EXPECT_GT(a.feeder.device_setup_seconds, 0);
  EXPECT_GT(b.feeder.device_setup_seconds, 0);
  EXPECT_EQ(a.feeder.pageable, 0u) << "a block taken before the context was copied unlocked";
  EXPECT_EQ(b.feeder.pageable, 0u);
  ASSERT_EQ(a.pixels.size(), b.pixels.size());
  ASSERT_EQ(a.pixels.size(), 3u);
  for (std::size_t k = 0; k < a.pixels.size(); ++k) {
    EXPECT_EQ(a.pixels[k], b.pixels[k]) << "pixels of batch " << k;
    EXPECT_EQ(a.images[k], b.images[k]) << "images of batch " << k;
  }
}

TEST(FeederSetUpBehind, ASetUpEndedBeforeFeedMakesTheRingAtTheFirstFeedAloneAndChangesNoByte) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const testing::Watchdog watchdog(180s, "ASetUpEndedBeforeFeedMakesTheRingAtTheFirstFeedAlone");
  const std::vector<std::vector<std::uint8_t>> files = photos(48);
  const FedRun reference = feed_all(files, cpu_decoding(true));
  // Made in the constructor: the set-up has ended before feed() says what its batches will be, as when a
  // training program's model made the context first.
  DeviceFeeder feeder(gpu(), cpu_decoding(false));
  const BatchedDataset dataset = deterministic_batches(files);
  const std::string before = feeder.stats().device_setup;
  EXPECT_EQ(before.find("at feed()"), std::string::npos) << before;
  for (int run = 0; run < 2; ++run) {
    auto it = feeder.feed(dataset);
    const cudaStream_t stream = cuda::consumer_stream(feeder);
    std::size_t k = 0;
    while (std::optional<DeviceBatch> batch = it.next()) {
      ASSERT_LT(k, reference.pixels.size());
      EXPECT_EQ(bytes_of(batch->pixels(), stream), reference.pixels[k]) << "run " << run << ", batch " << k;
      EXPECT_EQ(bytes_of(batch->images(), stream), reference.images[k]) << "run " << run << ", batch " << k;
      ++k;
    }
    EXPECT_EQ(k, reference.pixels.size());
  }
  feeder.synchronize();
  const FeederStats stats = feeder.stats();
  std::cout << "[ set-up   ] in the constructor, then: " << stats.device_setup << "; first stage() "
            << stats.first_stage_seconds << " s\n";
  // Made once, at the first feed(): the second feed()'s batches find the ring as the first left it.
  const std::size_t at = stats.device_setup.find("; at feed(), ring and kernels ");
  ASSERT_NE(at, std::string::npos) << stats.device_setup;
  EXPECT_EQ(stats.device_setup.find("at feed()", at + 3), std::string::npos) << stats.device_setup;
  EXPECT_EQ(stats.allocations, reference.feeder.allocations) << "the ring was made again by a stage()";
}

TEST(LateLockedHostMemory, BlocksMadeBeforeTheContextArePageLockedWhenItComesAndLaterOnesComeFromItsMemory) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  cuda::LateLockedHostMemory memory(0);
  const std::size_t bytes = 3 * 4096 + 100;  // not whole pages: locked whole all the same
  void* early[2] = {memory.allocate(bytes), memory.allocate(bytes)};
  std::memset(early[0], 7, bytes);  // written before locking, as the pipeline's workers do
  CONVEYOR_CUDA(cudaSetDevice(0), kTest);
  const std::string note = memory.context_ready(pinned_host_memory());
  EXPECT_NE(note.find("2 block(s) made before the CUDA context page-locked"), std::string::npos) << note;
  void* later = memory.allocate(bytes);
  for (void* block : {early[0], early[1], later}) {
    cudaPointerAttributes attributes{};
    CONVEYOR_CUDA(cudaPointerGetAttributes(&attributes, block), kTest);
    EXPECT_EQ(attributes.type, cudaMemoryTypeHost) << "a block the GPU cannot copy from directly";
  }
  EXPECT_EQ(static_cast<const std::uint8_t*>(early[0])[bytes - 1], 7) << "locking changed what was written";
  for (void* block : {early[0], early[1], later}) memory.deallocate(block, bytes);
}

}  // namespace
}  // namespace conveyor
