// Dataset::segmentation_folder's source: ROOT/images/NAME.jpg|.jpeg|.png beside ROOT/masks/NAME.png,
// matched by their paths below the two folders without the extension, listed once, in sorted order.
#pragma once

#include <filesystem>
#include <memory>

#include "conveyor/source.h"

namespace conveyor::detail {

// Throws IoError when a folder cannot be listed, InvalidArgument for an unpaired file (Unpaired::fail, naming
// both paths), two images of one name (a.jpg and a.png) or no pair at all.
std::shared_ptr<const SampleSource> segmentation_folder(const std::filesystem::path& root,
                                                        const SegmentationFolderOptions& options);

}  // namespace conveyor::detail
