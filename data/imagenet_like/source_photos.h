// The photos an ImageNet-like set is cut from: found in folders, filtered, ordered by content, decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <opencv2/core/mat.hpp>
#include <string>
#include <vector>

namespace conveyor::data {

struct SourcePhoto {
  std::filesystem::path path;
  int width = 0, height = 0;
  std::size_t bytes = 0;
  std::uint64_t hash = 0;  // XXH3 of the file's bytes: orders the sources by content, not by where they lie
};

struct SourceRules {
  int min_side = 300;                  // smaller photos are icons and thumbnails, not scenes
  std::size_t max_pixels = 5'000'000;  // leaves out the 5120x2880 wallpapers (see pack_photo_sources.sh)
};

// Every JPEG under `folders` (recursively, symlinks followed) that decodes and passes `rules`, each file
// once even when reached by several paths or copied, ordered by content hash so the same photos give the
// same set wherever they are. `skipped` receives "path: reason" for the others.
std::vector<SourcePhoto> find_source_photos(const std::vector<std::filesystem::path>& folders,
                                            const SourceRules& rules, std::vector<std::string>& skipped);

// The photo as RGB, shrunk by libjpeg-turbo's DCT scaling (1/2, 1/4, 1/8: the fast ones) while its short
// side stays at least `min_short_side`, so crops of large wallpapers show scenes rather than smooth detail.
cv::Mat decode_photo(const SourcePhoto& photo, int min_short_side);

}  // namespace conveyor::data
