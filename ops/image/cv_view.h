// Our image views as cv::Mat headers over the same pixels (no copy), for handing them to OpenCV.
#pragma once

#include <opencv2/core.hpp>

#include "conveyor/image.h"
#include "conveyor/mask.h"
#include "conveyor/ops/pad.h"

namespace conveyor::ops::detail {

inline cv::Mat as_mat(ImageView view) {
  return cv::Mat(view.height, view.width, CV_8UC(view.channels), view.data,
                 static_cast<std::size_t>(view.stride));
}

// OpenCV has no const Mat header; callers only ever pass the result as an input array.
inline cv::Mat as_mat(ConstImageView view) {
  return cv::Mat(view.height, view.width, CV_8UC(view.channels), const_cast<std::uint8_t*>(view.data),
                 static_cast<std::size_t>(view.stride));
}

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

inline cv::Mat as_mat(MaskView view) {
  return cv::Mat(view.height, view.width, cv_type(view.type), view.data,
                 static_cast<std::size_t>(view.stride));
}

inline cv::Mat as_mat(ConstMaskView view) {
  return cv::Mat(view.height, view.width, cv_type(view.type), const_cast<std::uint8_t*>(view.data),
                 static_cast<std::size_t>(view.stride));
}

}  // namespace conveyor::ops::detail
