// A batch's field tensors as Python sees them, by the names their field types give them: batch.fields (a
// dict of every one) and batch.<name> (batch.masks, batch.boxes, batch.keypoints, ...). The same for host and
// device batches; nothing here names a field.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "conveyor/batch.h"
#include "conveyor/cuda/device_batch.h"
#include "python/bindings.h"

namespace conveyor::python {

// {name: Tensor} of every field tensor, each holding `owner` (and, on a GPU, `device_batch`).
py::dict field_dict(std::span<const BatchTensor> tensors, const std::shared_ptr<const void>& owner,
                    const std::shared_ptr<const DeviceBatch>& device_batch);
// The tensor called `name`; None when it is a tensor name of a known field kind that this batch does not
// carry (batch.boxes of a segmentation batch); AttributeError naming `type` otherwise.
py::object field_attribute(std::span<const BatchTensor> tensors, const std::string& name,
                           const std::shared_ptr<const void>& owner,
                           const std::shared_ptr<const DeviceBatch>& device_batch, const char* type);

}  // namespace conveyor::python
