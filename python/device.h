// The device hand-off in Python: BatchedDataset.to_device and conveyor.DeviceFeeder.
#pragma once

#include "conveyor/dataset.h"
#include "python/bindings.h"

namespace conveyor::python {

// BatchedDataset.to_device(...): a DeviceFeeder for `device` ("auto", "cpu", "cuda", "cuda:N"; "gpu" and
// "gpu:N" too), normalizing when dtype, mean or std is given, and the iterator of its batches (which owns
// the feeder).
py::object to_device(const BatchedDataset& dataset, const py::object& device, const py::object& dtype,
                     const std::string& layout, const py::object& mean, const py::object& std, int depth);

}  // namespace conveyor::python
