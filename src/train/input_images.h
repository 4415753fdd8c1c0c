// Whether a batch's images() can be the model's input as they are. A feeder asked to normalize (and to run
// the per-pixel augmentation on the device) makes the model's input itself, on its copy stream: the step
// then copies it instead of normalizing pixels() again (FeederOptions::normalize = the trainer's
// input_normalization()).
#pragma once

#include <string>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/ops/normalize.h"

namespace conveyor::train {

// "float32 NHWC, mean {..}, std {..}" for messages.
std::string describe(const ops::NormalizeParams& params, int channels);

// True when the batch carries images() normalized exactly as `model` (element type, layout, mean and std of
// its `channels` channels). False when it carries none, or plain normalized images in another form (the
// step normalizes pixels() itself). Throws InvalidArgument when the images hold the feeder's augmentation
// (pixels() do not) in another form than the model's: normalizing pixels() would silently drop it.
bool takes_images(const DeviceBatch& batch, const ops::NormalizeParams& model, int channels);

}  // namespace conveyor::train
