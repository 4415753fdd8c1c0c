// The catalogue of files a user's image folder may hold, good and bad, each with what the pipeline must
// make of it, and the op chain the bad-input tests run them through.
#pragma once

#include <cstddef>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/image.h"
#include "conveyor/sample.h"
#include "jpeg_variants.h"

namespace conveyor::testing {

// Good images are at most 48 x 64 pixels; "over_pixel_limit" is 64 x 80. The chains refuse more than this.
inline constexpr std::size_t kPixelLimit = 64 * 64;
// What the chains deliver.
inline constexpr ImageShape kOutputShape{16, 16, 3};

// One file and the outcome the pipeline must give it.
struct FileCase {
  std::string name;  // also the file's stem: "<name>.jpg"
  Bytes bytes;
  // Empty for an image that must be delivered; otherwise the stage that must fail on it and the kind of
  // its reason (the key of PipelineStats::skip_reasons is "<stage>: <kind>").
  std::string stage;
  std::string kind;
  // False when a random-resized-crop chain may still decode a window of it (data cut in the middle of a
  // baseline scan: a window above the cut is intact), so its outcome there depends on the window.
  bool fails_every_window = true;

  bool good() const noexcept { return stage.empty(); }
  std::string skip_key() const { return stage + ": " + kind; }
};
// GoogleTest prints a case by its name.
inline void PrintTo(const FileCase& c, std::ostream* out) { *out << c.name; }

// Every case (made on the spot, deterministic): truncations at several points, other formats under a
// .jpg name, empty and 1x1 files, over-limit and absurd declared sizes, CMYK, progressive, gray, 4:4:4,
// arithmetic coding, 12-bit precision, a missing end-of-image marker, trailing bytes after it.
std::vector<FileCase> file_cases();
// The subset that is good, or bad.
std::vector<FileCase> good_cases();
std::vector<FileCase> bad_cases();

// decode (whole image, kPixelLimit) -> resize to kOutputShape -> flip -> distort.
std::vector<SampleOp> decode_chain();
// decode_random_resized_crop (kPixelLimit) to kOutputShape -> flip -> distort.
std::vector<SampleOp> crop_chain();
// The dataset with the chain's ops mapped over it.
Dataset with_ops(Dataset dataset, const std::vector<SampleOp>& ops);

}  // namespace conveyor::testing
