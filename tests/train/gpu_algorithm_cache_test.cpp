// The cuDNN algorithm cache with real cuDNN: a second trainer reuses every timed choice, an entry cuDNN
// does not accept for its shape is rejected and searched again, a corrupt file is a warning, and
// deterministic trainers and $CONVEYOR_ALGORITHM_CACHE=off leave the cache alone. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "conveyor/train/trainer.h"
#include "support/temp_dir.h"
#include "tests/train/gpu_test_support.h"
#include "tests/train/synthetic_batches.h"

namespace conveyor::train {
namespace {

constexpr ImageShape kShape{16, 16, 1};

TrainerOptions cached(const std::filesystem::path& folder) {
  TrainerOptions o;
  o.model = ModelKind::small_resnet;
  o.num_classes = 4;
  o.input = kShape;
  o.batch = 32;
  o.width = 8;
  o.blocks_per_stage = 1;
  o.precision = Precision::bf16;
  o.device = 0;
  o.algorithm_cache_dir = folder;
  return o;
}

std::string summary(const WarmupReport::AlgorithmCache& c) {
  std::string text = "file " + c.file + ": loaded " + std::to_string(c.loaded) + ", reused " +
                     std::to_string(c.reused) + ", searched " + std::to_string(c.searched) + ", rejected " +
                     std::to_string(c.rejected) + ", warnings " + std::to_string(c.warnings);
  for (const std::string& m : c.messages) text += "\n  " + m;
  return text;
}

// describe_layers() without the marks of reused choices: the algorithms and their measured times.
std::string without_cached_marks(std::string text) {
  for (std::size_t at; (at = text.find(", cached")) != std::string::npos;) text.erase(at, 8);
  return text;
}

double trained_loss(Trainer& trainer) {
  for (int s = 0; s < 3; ++s) trainer.step(testing::quadrant_batch(32, kShape, 70 + s).staged());
  return trainer.last_step().loss;
}

TEST(GpuAlgorithmCache, ASecondTrainerReusesEveryTimedChoice) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  Trainer first(cached(dir.path()));
  first.warmup();
  const auto& a = first.warmup_report().algorithm_cache;
  std::printf("[ first    ] %s\n", summary(a).c_str());
  EXPECT_GT(a.searched, 0u);
  EXPECT_EQ(a.reused, 0u);
  EXPECT_EQ(a.warnings, 0u);
  ASSERT_TRUE(std::filesystem::exists(a.file)) << a.file;
  EXPECT_EQ(std::filesystem::path(a.file).parent_path(), dir.path());

  Trainer second(cached(dir.path()));
  second.warmup();
  const auto& b = second.warmup_report().algorithm_cache;
  std::printf("[ second   ] %s\n[ warm-up  ] first %.3f s, second %.3f s (prepare %.3f / %.3f s)\n",
              summary(b).c_str(), first.warmup_seconds(), second.warmup_seconds(),
              first.warmup_report().prepare_seconds, second.warmup_report().prepare_seconds);
  EXPECT_EQ(b.loaded, a.searched);
  EXPECT_EQ(b.reused, a.searched);
  EXPECT_EQ(b.searched, 0u);
  EXPECT_EQ(b.rejected, 0u);
  EXPECT_EQ(b.warnings, 0u);
  EXPECT_NE(second.describe_layers().find(", cached"), std::string::npos) << second.describe_layers();
  EXPECT_EQ(without_cached_marks(second.describe_layers()), first.describe_layers());
  EXPECT_TRUE(std::isfinite(trained_loss(second)));
}

TEST(GpuAlgorithmCache, AnEntryCudnnDoesNotAcceptIsRejectedAndSearchedAgain) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  Trainer first(cached(dir.path()));
  first.warmup();
  const std::string file = first.warmup_report().algorithm_cache.file;
  const std::size_t shapes = first.warmup_report().algorithm_cache.searched;
  // Every forward algorithm replaced by one cuDNN has never had (the enum ends far below 1000): a cache
  // from a corrupted disk, or from a cuDNN that named its algorithms otherwise.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(file));
  for (auto& [key, entry] : j["convolutions"].items()) entry["forward"]["algorithm"] = 1000;
  std::ofstream(file) << j.dump();

  Trainer second(cached(dir.path()));
  second.warmup();
  const auto& b = second.warmup_report().algorithm_cache;
  std::printf("[ tampered ] %s\n", summary(b).c_str());
  EXPECT_EQ(b.rejected, shapes);
  EXPECT_EQ(b.searched, shapes);
  EXPECT_EQ(b.reused, 0u);
  ASSERT_FALSE(b.messages.empty());
  EXPECT_NE(b.messages[0].find("forward algorithm 1000"), std::string::npos) << b.messages[0];
  EXPECT_TRUE(std::isfinite(trained_loss(second)));

  Trainer third(cached(dir.path()));  // the searched entries replaced the rejected ones on disk
  third.warmup();
  EXPECT_EQ(third.warmup_report().algorithm_cache.reused, shapes)
      << summary(third.warmup_report().algorithm_cache);
}

TEST(GpuAlgorithmCache, ACorruptFileIsAWarningAndTheTrainerSearches) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  std::string file;
  {
    Trainer first(cached(dir.path()));
    first.warmup();
    file = first.warmup_report().algorithm_cache.file;
  }
  std::ofstream(file, std::ios::trunc) << "{\"format\": \"conveyor cuDNN convolution alg";  // cut short
  Trainer second(cached(dir.path()));
  second.warmup();
  const auto& b = second.warmup_report().algorithm_cache;
  std::printf("[ corrupt  ] %s\n", summary(b).c_str());
  EXPECT_EQ(b.warnings, 1u);
  EXPECT_GT(b.searched, 0u);
  EXPECT_EQ(b.reused, 0u);
  EXPECT_TRUE(std::isfinite(trained_loss(second)));
  EXPECT_TRUE(nlohmann::json::accept(std::ifstream(file))) << "the file was not rewritten whole";
}

TEST(GpuAlgorithmCache, DeterministicTrainersAndOffLeaveTheCacheAlone) {
  CONVEYOR_REQUIRE_GPU();
  testing::TempDir dir;
  TrainerOptions o = cached(dir.path());
  o.deterministic = true;
  Trainer deterministic(o);
  deterministic.warmup();
  EXPECT_EQ(deterministic.warmup_report().algorithm_cache.file, "");
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "a deterministic trainer wrote a cache";

  // The variable is read when no folder is given; "off" turns the cache off.
  const char* before = std::getenv("CONVEYOR_ALGORITHM_CACHE");
  const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
  ::setenv("CONVEYOR_ALGORITHM_CACHE", "off", 1);
  o = cached("");
  Trainer off(o);
  off.warmup();
  ::setenv("CONVEYOR_ALGORITHM_CACHE", (dir.path() / "from-env").c_str(), 1);
  Trainer from_env(o);
  from_env.warmup();
  if (saved)
    ::setenv("CONVEYOR_ALGORITHM_CACHE", saved->c_str(), 1);
  else
    ::unsetenv("CONVEYOR_ALGORITHM_CACHE");
  EXPECT_EQ(off.warmup_report().algorithm_cache.file, "");
  EXPECT_EQ(std::filesystem::path(from_env.warmup_report().algorithm_cache.file).parent_path(),
            dir.path() / "from-env");
}

}  // namespace
}  // namespace conveyor::train
