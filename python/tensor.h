// conveyor.Tensor: one tensor of a batch (images, pixels or labels) as Python sees it. It implements the
// DLPack protocol (__dlpack__, __dlpack_device__), so torch.from_dlpack, numpy.from_dlpack, jax.dlpack and
// cupy.from_dlpack take it without a copy, and, in host memory, numpy's array interface (numpy.asarray).
//
// A Tensor keeps the memory it views: while it, or a DLPack consumer's tensor made from it, lives, the
// batch's buffer stays out of its pool (host batches) or its feeder's ring slot stays held (device
// batches), as conveyor/dlpack.h and conveyor/cuda/device_batch.h describe. So the memory is never
// overwritten under a user who kept it; the pool or the feeder raises instead when too many are kept.
#pragma once

#include <memory>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/tensor.h"
#include "python/bindings.h"

namespace conveyor::python {

struct Tensor {
  TensorView view;
  // What keeps the memory: the host Batch, the DeviceBatch, ... Handed to every DLPack capsule.
  std::shared_ptr<const void> owner;
  // A tensor of a batch on a GPU: the batch, so that __dlpack__(stream=...) can make that stream a
  // reader of it (conveyor::cuda::read_on). Null for host memory.
  std::shared_ptr<const DeviceBatch> device_batch;
};

}  // namespace conveyor::python
