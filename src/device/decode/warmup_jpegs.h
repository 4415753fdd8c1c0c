// The JPEGs a GPU decoder warms up on (DeviceFeeder::warmup): made here, so that warm-up needs none of the
// user's files, and chosen so that every path of the decoder runs once: CUDA loads a kernel the first time
// it is launched (lazy module loading), and a first launch in the middle of a run waits for the device.
#pragma once

#include <cstdint>
#include <vector>

namespace conveyor::cuda {

struct WarmupJpeg {
  std::vector<std::uint8_t> bytes;
  int width = 0, height = 0;
  const char* kind = "";  // which path it is for, for logs
};

// A photo-sized picture (512 x 384: smooth shading with texture, so that its entropy coding looks like a
// photo's) encoded three ways: baseline 4:2:0 (nvJPEG's hardware engines take it), baseline 4:1:1 (the
// engines refuse it: the GPU-hybrid path) and progressive 4:2:0 (the engines and GPU hybrid refuse it:
// Huffman decoding on the CPU). The same bytes every call.
std::vector<WarmupJpeg> warmup_jpegs();

}  // namespace conveyor::cuda
