#include "bench_images.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <numeric>
#include <stdexcept>

#include "support/test_images.h"

namespace conveyor::bench {
namespace {

bool is_jpeg_name(const std::filesystem::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

std::vector<std::uint8_t> read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

BenchImages load_bench_images(std::size_t max_files) {
  BenchImages images;
  if (const char* folder = std::getenv("CONVEYOR_BENCH_IMAGES"); folder != nullptr && *folder != '\0') {
    std::vector<std::filesystem::path> paths;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder))
      if (entry.is_regular_file() && is_jpeg_name(entry.path())) paths.push_back(entry.path());
    std::sort(paths.begin(), paths.end());
    if (paths.size() > max_files) paths.resize(max_files);
    for (const auto& path : paths) images.jpegs.push_back(read_all(path));
    if (images.jpegs.empty()) throw std::runtime_error(std::string("no .jpg files under ") + folder);
    images.source = std::string("folder ") + folder;
  } else {
    // Made by the tests' generator: textured 500x375 pictures, quality 90, 4:2:0, like ImageNet photos.
    constexpr int kSynthetic = 32;
    for (int i = 0; i < kSynthetic; ++i)
      images.jpegs.push_back(testing::make_jpeg(375, 500, 3, 1000 + i, 90));
    images.source = "synthetic 500x375 q90 4:2:0";
  }
  const double total = std::accumulate(images.jpegs.begin(), images.jpegs.end(), 0.0,
                                       [](double sum, const auto& jpeg) { return sum + jpeg.size(); });
  images.mean_bytes = total / images.jpegs.size();
  return images;
}

}  // namespace conveyor::bench
