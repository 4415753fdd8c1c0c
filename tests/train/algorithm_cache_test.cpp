// The on-disk cache of cuDNN algorithm choices, on the CPU: where it lives, how entries are keyed, that it
// round-trips, that a corrupt, foreign or unwritable cache is a counted warning and never an exception,
// that writes are whole (rename of a finished file) and that concurrent writers' entries are merged.
// Whether cuDNN accepts a cached entry is checked on the GPU (gpu_trainer_test.cpp).
#include "src/train/layers/algorithm_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/temp_dir.h"

namespace conveyor::nn {
namespace {

AlgorithmEnvironment h100() { return {"NVIDIA H100 80GB HBM3", 9, 0, 132, 13000, 13000, 91900}; }

ConvolutionChoices choices(int algorithm, bool with_data = true) {
  ConvolutionChoices c;
  c.forward = {algorithm, 1, 4096, 0.125f};
  c.backward_filter = {algorithm + 1, 1, 0, 0.25f};
  if (with_data) c.backward_data = {algorithm + 2, 0, 1 << 20, 0.5f};
  c.search_budget = 1u << 30;
  return c;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

std::string messages(const AlgorithmCache& cache) {
  std::string all;
  for (const std::string& m : cache.messages()) all += m + "\n";
  return all;
}

const std::string kKey = "n256 h28 w28 c32 k32 r3 s3 stride1 pad1 dilation1 bf16";

TEST(AlgorithmCacheFolder, AnOptionWinsThenTheVariableThenXdgThenHome) {
  EXPECT_EQ(*algorithm_cache_folder("/opt/c", "/env", "/xdg", "/users/u"), "/opt/c");
  EXPECT_EQ(*algorithm_cache_folder("", "/env", "/xdg", "/users/u"), "/env");
  EXPECT_EQ(*algorithm_cache_folder("", nullptr, "/xdg", "/users/u"), "/xdg/conveyor");
  EXPECT_EQ(*algorithm_cache_folder("", "", "", "/users/u"), "/users/u/.cache/conveyor");
}

TEST(AlgorithmCacheFolder, ARelativeXdgCacheHomeIsIgnoredAsTheSpecificationAsks) {
  EXPECT_EQ(*algorithm_cache_folder("", nullptr, "relative/cache", "/users/u"), "/users/u/.cache/conveyor");
}

TEST(AlgorithmCacheFolder, OffTurnsTheCacheOffAndNoHomeLeavesNoPlaceForIt) {
  EXPECT_FALSE(algorithm_cache_folder("", "off", "/xdg", "/users/u"));
  EXPECT_FALSE(algorithm_cache_folder("", nullptr, nullptr, nullptr));
}

TEST(AlgorithmEnvironment, TheFileIsNamedAfterGpuDriverRuntimeAndCudnnWithSafeCharacters) {
  const std::string name = h100().file_name();
  EXPECT_EQ(name, "cudnn-algorithms-NVIDIA_H100_80GB_HBM3-sm90-132sm-driver13000-cuda13000-cudnn91900.json");
  AlgorithmEnvironment odd = h100();
  odd.gpu = "../a/b c";
  EXPECT_EQ(odd.file_name().find('/'), std::string::npos) << odd.file_name();
}

TEST(AlgorithmEnvironment, EveryPropertyChangesTheFile) {
  const AlgorithmEnvironment base = h100();
  std::set<std::string> names{base.file_name()};
  AlgorithmEnvironment e = base;
  e.gpu = "NVIDIA H200";
  names.insert(e.file_name());
  e = base, e.compute_minor = 9;
  names.insert(e.file_name());
  e = base, e.sm_count = 114;
  names.insert(e.file_name());
  e = base, e.driver = 12080;
  names.insert(e.file_name());
  e = base, e.runtime = 12090;
  names.insert(e.file_name());
  e = base, e.cudnn = 91000;
  names.insert(e.file_name());
  EXPECT_EQ(names.size(), 7u);
}

TEST(ConvolutionKey, EveryShapeTypeAndDirectionGivesItsOwnKey) {
  const ConvGeometry g{{256, 28, 28, 32}, 64, 3, 2, 1};
  std::set<std::string> keys;
  keys.insert(convolution_key(g, DType::bf16, true));
  keys.insert(convolution_key(g, DType::bf16, false));
  keys.insert(convolution_key(g, DType::f16, true));
  keys.insert(convolution_key(g, DType::f32, true));
  for (int field = 0; field < 8; ++field) {
    ConvGeometry h = g;
    int* fields[] = {&h.input.n,      &h.input.h, &h.input.w, &h.input.c,
                     &h.out_channels, &h.kernel,  &h.stride,  &h.pad};
    *fields[field] += 1;
    keys.insert(convolution_key(h, DType::bf16, true));
  }
  EXPECT_EQ(keys.size(), 12u);
  EXPECT_EQ(convolution_key(g, DType::bf16, true), convolution_key(g, DType::bf16, true));
}

TEST(AlgorithmCache, AFirstRunFindsNothingAndWarnsOfNothing) {
  testing::TempDir dir;
  AlgorithmCache cache(dir / "cache", h100());
  EXPECT_EQ(cache.find(kKey), nullptr);
  EXPECT_EQ(cache.counts().loaded, 0u);
  EXPECT_EQ(cache.counts().warnings, 0u) << messages(cache);
  EXPECT_EQ(cache.file(), dir / "cache" / h100().file_name());
}

TEST(AlgorithmCache, StoredChoicesComeBackInTheNextProcess) {
  testing::TempDir dir;
  {
    AlgorithmCache cache(dir / "cache", h100());  // the folder does not exist yet: save() makes it
    cache.store(kKey, choices(1));
    cache.store("first layer", choices(5, false));
    cache.save();
    EXPECT_EQ(cache.counts().warnings, 0u) << messages(cache);
  }
  AlgorithmCache again(dir / "cache", h100());
  EXPECT_EQ(again.counts().loaded, 2u);
  ASSERT_NE(again.find(kKey), nullptr);
  EXPECT_EQ(*again.find(kKey), choices(1));
  ASSERT_NE(again.find("first layer"), nullptr);
  EXPECT_EQ(*again.find("first layer"), choices(5, false));
  EXPECT_FALSE(again.find("first layer")->backward_data);
}

TEST(AlgorithmCache, SavingLeavesOnlyTheFinishedFileBehind) {
  testing::TempDir dir;
  AlgorithmCache cache(dir.path(), h100());
  cache.store(kKey, choices(1));
  cache.save();
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    names.push_back(entry.path().filename().string());
  ASSERT_EQ(names.size(), 1u) << names.size() << " files, e.g. " << names.back();
  EXPECT_EQ(names[0], h100().file_name());
  EXPECT_TRUE(nlohmann::json::accept(read_text(cache.file())));
}

TEST(AlgorithmCache, NothingIsWrittenWhenNothingChanged) {
  testing::TempDir dir;
  AlgorithmCache cache(dir.path(), h100());
  cache.save();
  EXPECT_FALSE(std::filesystem::exists(cache.file()));
}

TEST(AlgorithmCache, ACorruptFileIsIgnoredWithAWarningAndReplacedByAValidOne) {
  testing::TempDir dir;
  const std::filesystem::path file = dir / h100().file_name();
  const std::string variants[] = {
      "",                                                                               // empty
      "{\"format\": \"conveyor cuDNN convolution algorithms\"",                         // cut short
      std::string("\x00\xff\x13garbage", 10),                                           // not text
      "[1, 2, 3]",                                                                      // JSON, not ours
      "{\"format\": \"conveyor cuDNN convolution algorithms\", \"version\": \"one\"}",  // wrong type
  };
  for (const std::string& text : variants) {
    write_text(file, text);
    AlgorithmCache cache(dir.path(), h100());
    EXPECT_EQ(cache.counts().warnings, 1u) << "file: " << ::testing::PrintToString(text) << "\n"
                                           << messages(cache);
    EXPECT_EQ(cache.counts().loaded, 0u);
    EXPECT_EQ(cache.find(kKey), nullptr);
    ASSERT_FALSE(cache.messages().empty());
    EXPECT_NE(cache.messages()[0].find(file.string()), std::string::npos) << cache.messages()[0];
    cache.store(kKey, choices(2));
    cache.save();
    AlgorithmCache next(dir.path(), h100());
    EXPECT_EQ(next.counts().warnings, 0u) << messages(next);
    EXPECT_EQ(next.counts().loaded, 1u);
  }
}

TEST(AlgorithmCache, AnotherFormatVersionIsIgnoredWithAWarning) {
  testing::TempDir dir;
  {
    AlgorithmCache cache(dir.path(), h100());
    cache.store(kKey, choices(1));
    cache.save();
  }
  nlohmann::json j = nlohmann::json::parse(read_text(dir / h100().file_name()));
  j["version"] = 99;
  write_text(dir / h100().file_name(), j.dump());
  AlgorithmCache cache(dir.path(), h100());
  EXPECT_EQ(cache.counts().warnings, 1u);
  EXPECT_EQ(cache.find(kKey), nullptr);
  EXPECT_NE(messages(cache).find("version 99"), std::string::npos) << messages(cache);
}

TEST(AlgorithmCache, AFileFromAnotherGpuDriverOrCudnnIsForeignAndIgnored) {
  testing::TempDir dir;
  AlgorithmEnvironment other = h100();
  other.cudnn = 90100;
  {
    AlgorithmCache theirs(dir.path(), other);
    theirs.store(kKey, choices(1));
    theirs.save();
  }
  // Copied (or pointed at) under this environment's name.
  std::filesystem::copy_file(dir / other.file_name(), dir / h100().file_name());
  AlgorithmCache cache(dir.path(), h100());
  EXPECT_EQ(cache.counts().warnings, 1u);
  EXPECT_EQ(cache.counts().loaded, 0u);
  EXPECT_EQ(cache.find(kKey), nullptr);
  EXPECT_NE(messages(cache).find("cuDNN 90100"), std::string::npos) << messages(cache);
}

TEST(AlgorithmCache, ABadEntryIsSkippedAndTheOthersAreKept) {
  testing::TempDir dir;
  {
    AlgorithmCache cache(dir.path(), h100());
    cache.store(kKey, choices(1));
    cache.store("other", choices(3));
    cache.save();
  }
  nlohmann::json j = nlohmann::json::parse(read_text(dir / h100().file_name()));
  j["convolutions"]["other"]["forward"]["algorithm"] = "fastest";
  j["convolutions"]["negative"] = j["convolutions"][kKey];
  j["convolutions"]["negative"]["backward_filter"]["algorithm"] = -3;
  write_text(dir / h100().file_name(), j.dump());
  AlgorithmCache cache(dir.path(), h100());
  EXPECT_EQ(cache.counts().loaded, 1u);
  EXPECT_EQ(cache.counts().warnings, 2u) << messages(cache);
  ASSERT_NE(cache.find(kKey), nullptr);
  EXPECT_EQ(cache.find("other"), nullptr);
  EXPECT_EQ(cache.find("negative"), nullptr);
}

TEST(AlgorithmCache, ARejectedEntryIsCountedAndLeavesTheFile) {
  testing::TempDir dir;
  {
    AlgorithmCache cache(dir.path(), h100());
    cache.store(kKey, choices(1));
    cache.store("other", choices(3));
    cache.save();
  }
  {
    AlgorithmCache cache(dir.path(), h100());
    cache.reject(kKey, "conv1: forward algorithm 1 is not available");
    EXPECT_EQ(cache.counts().rejected, 1u);
    EXPECT_EQ(cache.counts().warnings, 0u);
    EXPECT_EQ(cache.find(kKey), nullptr);
    EXPECT_NE(messages(cache).find("forward algorithm 1"), std::string::npos);
    cache.save();
  }
  AlgorithmCache cache(dir.path(), h100());
  EXPECT_EQ(cache.find(kKey), nullptr);
  EXPECT_NE(cache.find("other"), nullptr);
}

TEST(AlgorithmCache, TwoWritersOfOneEnvironmentKeepEachOthersEntries) {
  testing::TempDir dir;
  AlgorithmCache a(dir.path(), h100()), b(dir.path(), h100());
  a.store("from a", choices(1));
  b.store("from b", choices(2));
  b.store("both", choices(7));
  a.store("both", choices(8));
  b.save();
  a.save();  // read b's file first: keeps "from b", its own "both" wins
  AlgorithmCache c(dir.path(), h100());
  EXPECT_EQ(c.counts().loaded, 3u);
  ASSERT_NE(c.find("from a"), nullptr);
  ASSERT_NE(c.find("from b"), nullptr);
  ASSERT_NE(c.find("both"), nullptr);
  EXPECT_EQ(c.find("both")->forward.algorithm, 8);
}

TEST(AlgorithmCache, AFolderThatCannotBeMadeIsAWarningNotAnException) {
  testing::TempDir dir;
  // A file where the folder should be: no one can create the folder, root included.
  write_text(dir / "not-a-folder", "x");
  AlgorithmCache cache(dir / "not-a-folder" / "cache", h100());
  EXPECT_EQ(cache.counts().warnings, 0u) << messages(cache);
  cache.store(kKey, choices(1));
  EXPECT_NO_THROW(cache.save());
  EXPECT_EQ(cache.counts().warnings, 1u);
  EXPECT_NE(messages(cache).find("not written"), std::string::npos) << messages(cache);
}

}  // namespace
}  // namespace conveyor::nn
