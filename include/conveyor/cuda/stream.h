// The device hand-off with CUDA's own types: which stream a feeder makes batches ready on, how another
// stream reads a batch safely, and normalize on a stream of your choice. This header includes the CUDA
// runtime's header and exists only in builds with CUDA (CONVEYOR_BUILT_WITH_CUDA in conveyor/version.h).
#pragma once

#include <cuda_runtime_api.h>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/ops/normalize.h"

namespace conveyor::cuda {

// The stream a GPU feeder makes each batch ready on: work enqueued there after stage() (or the
// iterator's next()) returned sees the batch. The feeder's own stream unless set_consumer_stream() chose
// another. Throws InvalidArgument for a feeder on the CPU.
cudaStream_t consumer_stream(const DeviceFeeder& feeder);

// Makes `stream` (a framework's current stream, say; nullptr: the feeder's own again) the consumer stream
// of the batches staged from now on. Only while no batch is held (Error otherwise).
void set_consumer_stream(DeviceFeeder& feeder, cudaStream_t stream);

// Lets `stream` read `batch` as well: it waits for the batch's data now, and the batch's memory is not
// reused before `stream` has passed the point where the batch is released. The same stream twice is fine.
// The release joins `stream` (an event recorded on it), so `stream` must outlive the batch: release the
// batch before destroying the stream (a Trainer that stepped on it is such a reader until it is destroyed).
void read_on(const DeviceBatch& batch, cudaStream_t stream);

// ops::normalize_batch on the GPU for a batch on the device: batch.size() images into `out` (device memory,
// params' element type and layout), enqueued on `stream` after making it a reader of the batch.
void normalize(const DeviceBatch& batch, const ops::NormalizeParams& params, void* out, cudaStream_t stream);

}  // namespace conveyor::cuda
