#include "conveyor/ops/flip.h"

#include <opencv2/core.hpp>

#include <string>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops {
namespace {

// cv::flip works in place (it swaps mirrored pairs) and uses SIMD for the common pixel sizes.
void flip(ConstImageView image, ImageView out, int code, const char* what) {
  if (image.empty()) throw InvalidArgument(std::string(what) + ": empty image");
  if (image.shape() != out.shape()) throw InvalidArgument(std::string(what) + ": output shape differs");
  cv::Mat dst = detail::as_mat(out);
  cv::flip(detail::as_mat(image), dst, code);
}

}  // namespace

void flip_horizontal(ImageView image) { flip(image, image, 1, "flip_horizontal"); }
void flip_vertical(ImageView image) { flip(image, image, 0, "flip_vertical"); }
void flip_horizontal(ConstImageView image, ImageView out) { flip(image, out, 1, "flip_horizontal"); }
void flip_vertical(ConstImageView image, ImageView out) { flip(image, out, 0, "flip_vertical"); }

}  // namespace conveyor::ops
