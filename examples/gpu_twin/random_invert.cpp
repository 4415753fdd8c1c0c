#include "random_invert.h"

#include <stdexcept>

#include "conveyor/random.h"

namespace gpu_twin_example {

bool draw_invert(double p, std::uint64_t seed, std::uint64_t stream) noexcept {
  conveyor::Rng rng(seed, stream);
  return rng.bernoulli(p);
}

conveyor::SampleOp random_invert(double p) {
  if (!(p >= 0 && p <= 1)) throw std::invalid_argument("random_invert: p must be in [0, 1]");
  return {"random_invert",
          [p](conveyor::Sample& sample) {
            if (!draw_invert(p, sample.seed, conveyor::op_stream(kInvertStream, sample.op_position))) return;
            const conveyor::ImageView image = sample.mutable_image();
            for (int y = 0; y < image.height; ++y) {
              std::uint8_t* row = image.row(y);
              for (int x = 0; x < image.width * image.channels; ++x)
                row[x] = static_cast<std::uint8_t>(255 - row[x]);
            }
          },
          RandomInvertSpec{p}, "random_invert"};
}

}  // namespace gpu_twin_example
