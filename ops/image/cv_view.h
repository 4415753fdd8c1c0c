// Our image views as cv::Mat headers over the same pixels (no copy), for handing them to OpenCV.
#pragma once

#include <opencv2/core.hpp>

#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/ops/pad.h"

namespace conveyor::ops::detail {

// A cv::Mat header of `type` over a view's rows. OpenCV has no const Mat header; callers only ever pass the
// header of a const view as an input array.
template <class View>
cv::Mat mat_header(const View& view, int type) {
  return cv::Mat(view.height, view.width, type, const_cast<std::uint8_t*>(view.data),
                 static_cast<std::size_t>(view.stride));
}

inline cv::Mat as_mat(ImageView view) { return mat_header(view, CV_8UC(view.channels)); }
inline cv::Mat as_mat(ConstImageView view) { return mat_header(view, CV_8UC(view.channels)); }

// OpenCV's border rule for a pad mode, for images and masks alike.
inline int cv_border(PadMode mode) {
  switch (mode) {
    case PadMode::constant:
      return cv::BORDER_CONSTANT;
    case PadMode::edge:
      return cv::BORDER_REPLICATE;
    case PadMode::reflect:
      return cv::BORDER_REFLECT_101;
    case PadMode::symmetric:
      return cv::BORDER_REFLECT;
  }
  return cv::BORDER_CONSTANT;
}

inline int cv_type(MaskType type) { return type == MaskType::uint16 ? CV_16UC1 : CV_8UC1; }

inline cv::Mat as_mat(MaskView view) { return mat_header(view, cv_type(view.type)); }
inline cv::Mat as_mat(ConstMaskView view) { return mat_header(view, cv_type(view.type)); }

}  // namespace conveyor::ops::detail
