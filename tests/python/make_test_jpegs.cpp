// make_test_jpegs OUT [CLASSES] [PER_CLASS] [HEIGHT] [WIDTH]: the Python tests' images, made by the C++
// tests' fixtures (tests/support): an ImageFolder tree OUT/class_K/image_N.jpg of deterministic pictures,
// each a few pixels larger than HEIGHT x WIDTH than the one before (so crops and resizes have work to do).
// Defaults: 3 classes of 8 images, about 48 x 64.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"
#include "support/test_images.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 6) {
    std::fprintf(stderr, "usage: make_test_jpegs OUT [CLASSES] [PER_CLASS] [HEIGHT] [WIDTH]\n");
    return 2;
  }
  const std::filesystem::path out = argv[1];
  const int classes = argc > 2 ? std::atoi(argv[2]) : 3;
  const int per_class = argc > 3 ? std::atoi(argv[3]) : 8;
  const int height = argc > 4 ? std::atoi(argv[4]) : 48;
  const int width = argc > 5 ? std::atoi(argv[5]) : 64;
  if (classes < 1 || per_class < 1 || height < 8 || width < 8) {
    std::fprintf(stderr, "make_test_jpegs: counts must be positive and sizes at least 8\n");
    return 2;
  }
  try {
    for (int k = 0; k < classes; ++k) {
      for (int i = 0; i < per_class; ++i) {
        const int n = k * per_class + i;
        const auto jpeg = conveyor::testing::make_jpeg(height + n % 7 * 3, width + n % 5 * 4, 3,
                                                       static_cast<std::uint64_t>(n + 1));
        char name[64];
        std::snprintf(name, sizeof name, "class_%d/image_%03d.jpg", k, i);
        conveyor::testing::write_file(out / name, jpeg);
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_test_jpegs: %s\n", error.what());
    return 1;
  }
  return 0;
}
