// All of conveyor's image operations: JPEG decoding (with ROI and DCT scaling), PNG decoding (images and
// masks), crops, padding, flips, colour distortion, resizing, what they do to masks and boxes, and their
// SampleOp factories for pipelines.
#pragma once

#include "conveyor/ops/apply_geometry.h"
#include "conveyor/ops/center_crop.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/decode_png.h"
#include "conveyor/ops/distort.h"
#include "conveyor/ops/encode_jpeg.h"
#include "conveyor/ops/field_geometry.h"
#include "conveyor/ops/flip.h"
#include "conveyor/ops/normalize.h"
#include "conveyor/ops/pad.h"
#include "conveyor/ops/random_resized_crop.h"
#include "conveyor/ops/raw_image.h"
#include "conveyor/ops/rect.h"
#include "conveyor/ops/resize.h"
#include "conveyor/ops/sample_ops.h"
