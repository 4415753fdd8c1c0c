// place_pixel_ops (conveyor/cuda/device_feeder.h): on a GPU placement, the chain's trailing ops whose GPU
// twin the feeder's registry knows (FeederOptions::gpu_twins, by the name each op gives in
// SampleOp::gpu_twin) move to the feeder. A twin that moves pixels geometrically (a flip) moves only when the
// samples have no field that follows the image: the pipeline's ops move every field together, the feeder's
// images only, so samples with fields are the same wherever they are made.
#include <utility>

#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/gpu_twins.h"

namespace conveyor {
namespace {

// One scan from the chain's end.
class Placing {
 public:
  Placing(const GpuTwins& twins, const FieldSet& fields, FeederOptions& options)
      : twins_(twins), fields_(fields), options_(options) {}

  // Takes `op`, at `position` among the chain's maps and filters, when its twin can run after the copy;
  // false ends the scan (the ops before it stay in the pipeline, in order).
  bool take(const SampleOp& op, std::uint64_t position) {
    const GpuTwin* twin = twins_.find(op.gpu_twin);
    if (twin == nullptr || !twin->place) return false;
    if (twin->geometric && fields_.follows_geometry()) return false;
    // The fused kernel runs after every pixel twin: an op before a pixel twin in the chain cannot join it.
    if (twin->fused && pixel_taken_) return false;
    if (!twin->place(op, position, options_)) return false;
    pixel_taken_ = pixel_taken_ || !twin->fused;
    return true;
  }

 private:
  const GpuTwins& twins_;
  const FieldSet& fields_;
  FeederOptions& options_;
  bool pixel_taken_ = false;
};

GpuTwins twins_of(const FeederOptions& options) {
  return options.gpu_twins ? *options.gpu_twins : GpuTwins::library();
}

}  // namespace

std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options) {
  return place_pixel_ops(std::move(maps), placement, options, FieldSet{});
}

std::vector<SampleOp> place_pixel_ops(std::vector<SampleOp> maps, const Placement& placement,
                                      FeederOptions& options, const FieldSet& fields) {
  if (!placement.gpu) return maps;
  const GpuTwins twins = twins_of(options);
  Placing placing(twins, fields, options);
  // An op's draws depend on its position among the chain's maps (op_stream): the moved op keeps its own.
  while (!maps.empty() && placing.take(maps.back(), maps.size() - 1)) maps.pop_back();
  return maps;
}

BatchedDataset place_pixel_ops(const BatchedDataset& dataset, const Placement& placement,
                               FeederOptions& options) {
  if (!placement.gpu) return dataset;
  // The same scan over a built chain: its maps keep the positions they were given (filters count).
  Dataset samples = dataset.samples();
  const FieldSet fields = samples.fields();
  const GpuTwins twins = twins_of(options);
  Placing placing(twins, fields, options);
  bool moved = false;
  for (auto last = samples.last_map(); last && placing.take(last->op, last->position);
       last = samples.last_map()) {
    samples = samples.without_last_map();
    moved = true;
  }
  return moved ? dataset.with_samples(std::move(samples)) : dataset;
}

bool may_defer_to_gpu(const BatchedDataset& dataset, const FeederOptions& options) {
  const std::optional<Dataset::PlacedMap> last = dataset.samples().last_map();
  if (!last) return false;
  const GpuTwins twins = twins_of(options);  // kept while its entry is read
  const GpuTwin* twin = twins.find(last->op.gpu_twin);
  return twin != nullptr && twin->defers;
}

}  // namespace conveyor
