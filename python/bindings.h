// conveyor's Python module: a thin layer over the C++ API with the same names. Each bind_* function adds
// one concept to the module; module.cpp calls them in order (errors first: the others' docstrings and
// signatures name its types). Only public headers are used, so the module also builds on its own against
// an installed conveyor (python/CMakeLists.txt).
//
// Threads and the GIL: the pipeline's threads never touch Python, except in the maps and filters that
// take a Python callable (sample.cpp), which take the GIL for each call. Every call that may block
// (iterating, closing an iterator, staging, synchronizing) releases the GIL first, so those callables,
// and any other Python thread, keep running meanwhile.
#pragma once

#include <pybind11/pybind11.h>
// In every file of the module or in none (pybind11's rule): the conversions of std::vector, std::map,
// std::optional and std::filesystem::path.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

namespace conveyor::python {

namespace py = pybind11;

// conveyor.Error and its subclasses, and the translation of conveyor's C++ exceptions into them.
void bind_errors(py::module_& module);
// conveyor.Tensor: a view of batch memory that implements the DLPack protocol.
void bind_tensor(py::module_& module);
// conveyor.PipelineStats, conveyor.FeederStats, conveyor.TraceRecorder.
void bind_observe(py::module_& module);
// conveyor.ops: SampleOp and the factories of the built-in image ops.
void bind_ops(py::module_& ops);
// conveyor.Sample (an element, owned or seen by a Python map/filter) and conveyor.SampleInfo.
void bind_sample(py::module_& module);
// conveyor.Batch and the iterators over samples and host batches.
void bind_batches(py::module_& module);
// conveyor.DeviceFeeder, conveyor.DeviceBatch, conveyor.Placement and the device iterator.
void bind_device(py::module_& module);
// conveyor.PipelineOptions, conveyor.Dataset, conveyor.BatchedDataset (after the types they return).
void bind_dataset(py::module_& module);
// conveyor.Dataset.from_service and conveyor.service (after Dataset), where the module was built with the
// data service.
void bind_service(py::module_& module);

}  // namespace conveyor::python
