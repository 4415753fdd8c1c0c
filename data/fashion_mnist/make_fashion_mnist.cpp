// make_fashion_mnist: Fashion-MNIST's IDX files -> grayscale JPEGs in an ImageFolder layout.
//
//   make_fashion_mnist --idx DIR --out DIR [--quality 95] [--threads N]
//   make_fashion_mnist --recipe          the line that identifies what this version writes (for stamps)
//
// DIR (input) holds the uncompressed {train,t10k}-{images-idx3,labels-idx1}-ubyte files (the script
// decompresses Debian's .gz files with gzip). Output: OUT/{train,test}/<class>/<index>.jpg, index
// zero-padded within the split, and OUT/{train,test}.txt with "relative/path label" lines (relative to
// OUT), in index order.
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "data/common/tool_support.h"

namespace {

namespace fs = std::filesystem;
using conveyor::data::JpegEncoder;

constexpr std::array<const char*, 10> kClasses = {
    "T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"};
// Bump the version when the output changes: the stamps of made sets compare this line.
constexpr const char* kRecipe =
    "make_fashion_mnist v1: gray JPEG, ImageFolder {train,test}/<class>/<index:05>.jpg";

struct Split {
  std::string name;  // "train" / "test"
  std::string idx;   // "train" / "t10k"
  int rows = 0, cols = 0;
  std::vector<std::uint8_t> images;  // count x rows x cols
  std::vector<std::uint8_t> labels;  // count
  std::size_t count() const { return labels.size(); }
};

std::uint32_t big_endian(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return (std::uint32_t{bytes[at]} << 24) | (std::uint32_t{bytes[at + 1]} << 16) |
         (std::uint32_t{bytes[at + 2]} << 8) | bytes[at + 3];
}

// IDX: magic 0x00000803 (unsigned bytes, 3 dimensions) + count, rows, cols; or 0x00000801 + count.
Split read_split(const fs::path& dir, const std::string& name, const std::string& idx) {
  Split split;
  split.name = name;
  split.idx = idx;
  const fs::path images_path = dir / (idx + "-images-idx3-ubyte");
  const fs::path labels_path = dir / (idx + "-labels-idx1-ubyte");
  std::vector<std::uint8_t> images = conveyor::data::read_file(images_path);
  std::vector<std::uint8_t> labels = conveyor::data::read_file(labels_path);
  auto bad = [](const fs::path& path, const std::string& why) {
    return std::runtime_error(path.string() + " is not a valid IDX file: " + why);
  };
  if (images.size() < 16 || big_endian(images, 0) != 0x803) throw bad(images_path, "magic is not 0x00000803");
  if (labels.size() < 8 || big_endian(labels, 0) != 0x801) throw bad(labels_path, "magic is not 0x00000801");
  const std::size_t count = big_endian(images, 4);
  split.rows = static_cast<int>(big_endian(images, 8));
  split.cols = static_cast<int>(big_endian(images, 12));
  if (split.rows <= 0 || split.cols <= 0 || split.rows > 4096 || split.cols > 4096)
    throw bad(images_path, "implausible image size");
  if (images.size() !=
      16 + count * static_cast<std::size_t>(split.rows) * static_cast<std::size_t>(split.cols))
    throw bad(images_path, "size does not match its header");
  if (big_endian(labels, 4) != count) throw bad(labels_path, "label count differs from the image count");
  if (labels.size() != 8 + count) throw bad(labels_path, "size does not match its header");
  split.images.assign(images.begin() + 16, images.end());
  split.labels.assign(labels.begin() + 8, labels.end());
  for (const std::uint8_t label : split.labels)
    if (label >= kClasses.size()) throw bad(labels_path, "label " + std::to_string(label) + " out of range");
  return split;
}

std::string relative_path(const Split& split, std::size_t index) {
  char name[32];
  std::snprintf(name, sizeof name, "%05zu.jpg", index);
  return split.name + "/" + kClasses[split.labels[index]] + "/" + name;
}

void write_split(const Split& split, const fs::path& out, int quality) {
  for (const char* cls : kClasses) fs::create_directories(out / split.name / cls);
  tbb::enumerable_thread_specific<JpegEncoder> encoders;
  const std::size_t pixels = static_cast<std::size_t>(split.rows) * static_cast<std::size_t>(split.cols);
  tbb::parallel_for(tbb::blocked_range<std::size_t>(0, split.count(), 256), [&](const auto& range) {
    JpegEncoder& encoder = encoders.local();
    for (std::size_t i = range.begin(); i != range.end(); ++i) {
      const auto jpeg = encoder.encode(split.images.data() + i * pixels, split.cols, split.rows, TJPF_GRAY,
                                       TJSAMP_GRAY, quality);
      conveyor::data::write_file(out / relative_path(split, i), jpeg);
    }
  });
  std::string list;
  for (std::size_t i = 0; i < split.count(); ++i)
    list += relative_path(split, i) + " " + std::to_string(split.labels[i]) + "\n";
  conveyor::data::write_file(out / (split.name + ".txt"),
                             {reinterpret_cast<const std::uint8_t*>(list.data()), list.size()});
}

}  // namespace

int main(int argc, char** argv) {
  fs::path idx, out;
  int quality = 95, threads = 0;
  bool recipe = false;
  CLI::App app(
      "make_fashion_mnist: Fashion-MNIST's IDX files -> grayscale JPEGs in an ImageFolder layout,\n"
      "OUT/{train,test}/<class>/<index:05>.jpg and OUT/{train,test}.txt (\"path label\" lines).");
  app.add_option("--idx", idx,
                 "folder of the uncompressed {train,t10k}-{images-idx3,labels-idx1}-ubyte files (required)");
  app.add_option("--out", out, "output folder (required)");
  app.add_option("--quality", quality, "JPEG quality")->capture_default_str()->check(CLI::Range(1, 100));
  app.add_option("--threads", threads, "threads (0: all cores)")->check(CLI::Range(0, 4096));
  app.add_flag("--recipe", recipe,
               "print the line that identifies what this version writes (for stamps) and exit");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): --recipe needs neither, and CLI11 would report a missing
    // option before an unknown flag.
    if (!recipe && idx.empty()) throw CLI::RequiredError("--idx");
    if (!recipe && out.empty()) throw CLI::RequiredError("--out");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  if (recipe) {
    std::printf("%s\n", kRecipe);
    return 0;
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    tbb::task_arena arena(threads > 0 ? threads : tbb::task_arena::automatic);
    std::size_t files = 0;
    arena.execute([&] {
      // Fashion-MNIST names its test split "t10k" like MNIST did.
      for (const auto& [name, prefix] : {std::pair{"train", "train"}, std::pair{"test", "t10k"}}) {
        const Split split = read_split(idx, name, prefix);
        write_split(split, out, quality);
        files += split.count();
      }
    });
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fashion-mnist: %zu JPEGs (quality %d) in %.1f s\n", files, quality, seconds);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_fashion_mnist: %s\n", error.what());
    return 1;
  }
  return 0;
}
