// Dataset::coco_detection's source: a COCO "instances" JSON parsed once into flat tables (the images'
// paths, and per image a run of boxes, classes and crowd flags), read per element like a folder's files.
#pragma once

#include <filesystem>
#include <memory>

#include "conveyor/source.h"

namespace conveyor::detail {

std::shared_ptr<const SampleSource> coco_detection(const std::filesystem::path& annotations,
                                                   const std::filesystem::path& images,
                                                   const CocoOptions& options);

}  // namespace conveyor::detail
