// The JPEGs the ops benchmarks run on: the first 200 .jpg files (sorted by path) of the folder named by
// CONVEYOR_BENCH_IMAGES, or synthetic ImageNet-sized JPEGs when it is unset.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor::bench {

struct BenchImages {
  std::vector<std::vector<std::uint8_t>> jpegs;
  std::string source;  // "folder <path>" or "synthetic 500x375 q90 4:2:0"
  double mean_bytes = 0;
};

BenchImages load_bench_images(std::size_t max_files = 200);

}  // namespace conveyor::bench
