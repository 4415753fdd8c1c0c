// Everything a user of conveyor needs: datasets and batches, image ops, devices and the feeder, training.
#pragma once

#include "conveyor/batch.h"
#include "conveyor/batch_checksum.h"
#include "conveyor/dataset.h"
#include "conveyor/device.h"
#include "conveyor/device_feeder.h"
#include "conveyor/error.h"
#include "conveyor/image.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"
#include "conveyor/staged_batch.h"
#include "conveyor/stats.h"
#include "conveyor/trace.h"
#include "conveyor/train.h"
