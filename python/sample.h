// conveyor.Sample on the Python side, and the adapters that let a Python callable be a map or a filter.
#pragma once

#include <functional>

#include "conveyor/sample.h"
#include "python/bindings.h"

namespace conveyor::python {

// A conveyor.Sample that owns `sample` (an element delivered by iterating a Dataset).
py::object owned_sample(Sample sample);

// Dataset.map / Dataset.filter with a Python callable: each call takes the GIL, hands the callable a
// conveyor.Sample that is valid during the call only, and turns a Python exception into a conveyor::Error
// (the pipeline adds the path and the stage). The callable may be dropped on any thread.
std::function<void(Sample&)> python_map(py::function callable);
std::function<bool(const Sample&)> python_filter(py::function callable);
// A Python source's read(i, sample) (Dataset.from_source), called the same way.
std::function<void(std::size_t, Sample&)> python_read(py::function read);

}  // namespace conveyor::python
