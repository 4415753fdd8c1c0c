// Everything a user of conveyor needs, all three wings: conveyor::data (datasets, batches, image ops),
// conveyor::cuda (devices, pinned memory, the feeder and its device batches) and conveyor::train (the
// trainer). A program that wants batches only includes the data wing's headers and links conveyor::data.
#pragma once

#include "conveyor/batch.h"
#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/cuda/dlpack.h"
#include "conveyor/cuda/normalize.h"
#include "conveyor/cuda/pinned_memory.h"
#include "conveyor/dataset.h"
#include "conveyor/dlpack.h"
#include "conveyor/error.h"
#include "conveyor/host_memory.h"
#include "conveyor/image.h"
#include "conveyor/library_version.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "conveyor/read_file.h"
#include "conveyor/sample.h"
#include "conveyor/stats.h"
#include "conveyor/tensor.h"
#include "conveyor/trace.h"
#include "conveyor/train/library_versions.h"
#include "conveyor/train/trainer.h"
#include "conveyor/version.h"
