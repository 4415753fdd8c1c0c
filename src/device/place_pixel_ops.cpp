// place_pixel_ops (conveyor/cuda/device_feeder.h): the trailing flip and distort of a chain move to the
// feeder's device list when the placement is a GPU.
#include <any>
#include <utility>

#include "conveyor/cuda/device_feeder.h"

namespace conveyor {

std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options) {
  if (!placement.gpu || !options.normalize) return maps;
  DeviceAugment& augment = options.augment;
  // Flip and distort commute (one moves pixels, the other changes values and the mean it uses), so either
  // order at the end of the chain may move; a second op of a kind already moved ends the scan.
  // An op's draws depend on its position among the chain's maps (op_stream): the moved op keeps its own.
  while (!maps.empty()) {
    const SampleOp& last = maps.back();
    const std::uint64_t position = maps.size() - 1;
    if (const auto* flip = std::any_cast<ops::FlipHorizontalSpec>(&last.spec);
        flip && !augment.flip_horizontal) {
      augment.flip_horizontal = flip->p;
      augment.flip_stream = op_stream(flip->stream, position);
    } else if (const auto* distort = std::any_cast<ops::DistortSpec>(&last.spec);
               distort && !augment.distort) {
      augment.distort = distort->options;
      augment.distort_stream = op_stream(distort->stream, position);
    } else {
      break;
    }
    maps.pop_back();
  }
  return maps;
}

}  // namespace conveyor
