// The device hand-off in Python: BatchedDataset.to_device and conveyor.DeviceFeeder.
#pragma once

#include <optional>
#include <string>

#include "conveyor/dataset.h"
#include "python/bindings.h"

namespace conveyor::python {

// Where the work after the copy runs on a GPU (FeederOptions::augment and FeederOptions::decode).
struct GpuWork {
  // Move the chain's trailing flip_horizontal and distort onto the GPU, fused with normalize
  // (place_pixel_ops); to_device only, which sees the chain before the feeder is made.
  bool augment = true;
  // Hybrid nvJPEG decoding of decode_random_resized_crop's images; nullopt: when the chain (after the
  // move above) ends in that op and the ring has 2 slots or more.
  std::optional<bool> decode = {};
  std::optional<double> share = {};  // the GPU's share of them; DeviceDecode's default when not given
};

// BatchedDataset.to_device(...): a DeviceFeeder for `device` ("auto", "cpu", "cuda", "cuda:N"; "gpu" and
// "gpu:N" too), normalizing when dtype, mean or std is given, with the work after the copy on the GPU as
// `work` says, and the iterator of its batches (which owns the feeder). depth nullopt: 3, or 4 when the
// feeder decodes on the GPU.
py::object to_device(const BatchedDataset& dataset, const py::object& device, const py::object& dtype,
                     const std::string& layout, const py::object& mean, const py::object& std,
                     std::optional<int> depth, const GpuWork& work);

}  // namespace conveyor::python
