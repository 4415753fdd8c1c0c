#include "conveyor/ops/resize.h"

#include <opencv2/imgproc.hpp>

#include "conveyor/error.h"
#include "ops/image/cv_view.h"

namespace conveyor::ops {

void resize(ConstImageView image, ImageView out, Interpolation interpolation) {
  if (image.empty() || out.empty()) throw InvalidArgument("resize: empty image");
  if (image.channels != out.channels) throw InvalidArgument("resize: input and output channels differ");
  int method = cv::INTER_LINEAR;
  switch (interpolation) {
    case Interpolation::nearest:
      method = cv::INTER_NEAREST;
      break;
    case Interpolation::linear:
      method = cv::INTER_LINEAR;
      break;
    case Interpolation::area:
      method = cv::INTER_AREA;
      break;
  }
  cv::Mat dst = detail::as_mat(out);
  cv::resize(detail::as_mat(image), dst, dst.size(), 0, 0, method);
  if (dst.data != out.data) throw Error("resize: OpenCV reallocated the output");  // would be a bug here
}

}  // namespace conveyor::ops
