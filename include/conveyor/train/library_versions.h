// The versions of every library a training run uses, as loaded: the device wing's report
// (conveyor/cuda/device.h: CUDA driver and runtime, libjpeg-turbo, oneTBB, OpenCV) with cuDNN and cuBLAS.
#pragma once

#include "conveyor/cuda/device.h"

namespace conveyor::train {

// conveyor::library_versions() with cuDNN and cuBLAS added (in a build without CUDA, the same).
LibraryVersions library_versions();

}  // namespace conveyor::train
