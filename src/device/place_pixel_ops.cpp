// place_pixel_ops (conveyor/cuda/device_feeder.h): the trailing flip and distort of a chain move to the
// feeder's device list when the placement is a GPU. A flip moves only when the samples have no field that
// follows the image (a mask, boxes): the feeder flips images only, and the pipeline's flip moves all of a
// sample's fields together, so samples with fields are the same wherever they are made.
#include <any>
#include <utility>

#include "conveyor/cuda/device_feeder.h"

namespace conveyor {
namespace {

// Takes `op`, a map at `position` among the chain's maps and filters, into augment when it is a flip or a
// distort of a kind not yet taken; false when it stays (which ends the scan from the chain's end).
bool take_into(DeviceAugment& augment, const SampleOp& op, std::uint64_t position, const FieldSet& fields) {
  const bool geometry_moves = !fields.follows_geometry();
  if (const auto* flip = std::any_cast<ops::FlipHorizontalSpec>(&op.spec);
      flip && !augment.flip_horizontal && geometry_moves) {
    augment.flip_horizontal = flip->p;
    augment.flip_stream = op_stream(flip->stream, position);
    return true;
  }
  if (const auto* distort = std::any_cast<ops::DistortSpec>(&op.spec); distort && !augment.distort) {
    augment.distort = distort->options;
    augment.distort_stream = op_stream(distort->stream, position);
    return true;
  }
  return false;
}

}  // namespace

std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options) {
  return place_pixel_ops(std::move(maps), placement, options, FieldSet{});
}

std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options, const FieldSet& fields) {
  if (!placement.gpu || !options.normalize) return maps;
  DeviceAugment& augment = options.augment;
  // Flip and distort commute (one moves pixels, the other changes values and the mean it uses), so either
  // order at the end of the chain may move; a second op of a kind already moved ends the scan.
  // An op's draws depend on its position among the chain's maps (op_stream): the moved op keeps its own.
  while (!maps.empty() && take_into(augment, maps.back(), maps.size() - 1, fields)) maps.pop_back();
  return maps;
}

BatchedDataset place_pixel_ops(const BatchedDataset& dataset, const Placement& placement,
                               FeederOptions& options) {
  if (!placement.gpu || !options.normalize) return dataset;
  // The same scan over a built chain: its maps keep the positions they were given (filters count).
  Dataset samples = dataset.samples();
  bool moved = false;
  const FieldSet fields = samples.fields();
  for (auto last = samples.last_map(); last && take_into(options.augment, last->op, last->position, fields);
       last = samples.last_map()) {
    samples = samples.without_last_map();
    moved = true;
  }
  return moved ? dataset.with_samples(std::move(samples)) : dataset;
}

}  // namespace conveyor
