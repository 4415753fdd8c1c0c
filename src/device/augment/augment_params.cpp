#include "src/device/augment/augment_params.h"

#include <string>

#include "conveyor/error.h"
#include "conveyor/ops/flip.h"
#include "conveyor/random.h"

namespace conveyor::cuda {

void draw_augment_params(std::span<const std::uint64_t> seeds, int channels, const AugmentDraws& draws,
                         std::span<SampleAugment> out) {
  if (seeds.size() != out.size())
    throw InvalidArgument("draw_augment_params: " + std::to_string(seeds.size()) + " seeds for " +
                          std::to_string(out.size()) + " samples");
  if (channels != 1 && channels != 3)
    throw InvalidArgument("draw_augment_params: 1 or 3 channels, not " + std::to_string(channels));
  if (draws.flip && !(draws.flip->p >= 0.0 && draws.flip->p <= 1.0))
    throw InvalidArgument("draw_augment_params: flip probability must be in [0, 1]");
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    SampleAugment& sample = out[i];
    sample.flip = draws.flip && ops::draw_flip(draws.flip->p, seeds[i], draws.flip->stream) ? 1u : 0u;
    if (draws.distort) {
      Rng rng(seeds[i], draws.distort->stream);
      sample.color = ops::detail::plan_color(ops::draw_color_jitter(draws.distort->options, rng), channels);
    } else {
      sample.color = ops::detail::ColorPlan{};
    }
  }
}

}  // namespace conveyor::cuda
