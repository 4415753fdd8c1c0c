#include "examples/preview/contact_sheet.h"

#include <algorithm>
#include <cmath>
#include <opencv2/imgproc.hpp>

#include "conveyor/fields/keypoints.h"

namespace preview {
namespace {

constexpr int kGap = 4;

// A colour per class id, far apart for neighbouring ids (the golden-ratio walk round the hue circle).
cv::Scalar colour_of(std::uint32_t id) {
  const double hue = std::fmod(static_cast<double>(id) * 0.618033988749895, 1.0) * 180.0;
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue, 220, 255)), rgb;
  cv::cvtColor(hsv, rgb, cv::COLOR_HSV2RGB);
  const cv::Vec3b c = rgb.at<cv::Vec3b>(0, 0);
  return {static_cast<double>(c[0]), static_cast<double>(c[1]), static_cast<double>(c[2])};
}

// The sample's image with its mask over it (half and half; 0 is background and shows the image, 255 the
// ignore id shows grey), its boxes outlined in their class's colour, and its visible keypoints as dots of
// their box's colour (a white ring around each).
cv::Mat tile_of(const conveyor::Sample& sample) {
  const conveyor::ConstImageView image = sample.image();
  cv::Mat tile(image.height, image.width, CV_8UC3);
  for (int y = 0; y < image.height; ++y) {
    const std::uint8_t* row = image.row(y);
    for (int x = 0; x < image.width; ++x) {
      cv::Vec3b& out = tile.at<cv::Vec3b>(y, x);
      for (int c = 0; c < 3; ++c) out[c] = row[x * image.channels + (image.channels == 3 ? c : 0)];
    }
  }
  const conveyor::ConstMaskView mask = sample.mask();
  if (!mask.empty()) {
    for (int y = 0; y < mask.height; ++y)
      for (int x = 0; x < mask.width; ++x) {
        const std::uint32_t id = mask.at(y, x);
        if (id == 0) continue;
        const cv::Scalar colour = id == 255 ? cv::Scalar(128, 128, 128) : colour_of(id);
        cv::Vec3b& out = tile.at<cv::Vec3b>(y, x);
        for (int c = 0; c < 3; ++c) out[c] = static_cast<std::uint8_t>((out[c] + colour[c]) / 2);
      }
  }
  for (std::size_t b = 0; b < sample.boxes.size(); ++b) {
    const conveyor::Box& box = sample.boxes.boxes()[b];
    cv::rectangle(tile, cv::Point(static_cast<int>(box.x0), static_cast<int>(box.y0)),
                  cv::Point(static_cast<int>(box.x1) - 1, static_cast<int>(box.y1) - 1),
                  colour_of(static_cast<std::uint32_t>(sample.boxes.classes()[b])), 1);
  }
  if (const conveyor::KeypointsField* keypoints = sample.find_field<conveyor::KeypointsField>())
    for (std::size_t i = 0; i < keypoints->instances(); ++i) {
      const cv::Scalar colour = i < sample.boxes.size()
                                    ? colour_of(static_cast<std::uint32_t>(sample.boxes.classes()[i]))
                                    : cv::Scalar(255, 255, 0);
      for (const conveyor::Keypoint& point : keypoints->instance(i)) {
        if (point.v == 0) continue;
        const cv::Point at(static_cast<int>(point.x), static_cast<int>(point.y));
        cv::circle(tile, at, 2, cv::Scalar(255, 255, 255), 1);
        cv::circle(tile, at, 1, colour, cv::FILLED);
      }
    }
  return tile;
}

}  // namespace

conveyor::Image contact_sheet(const std::vector<conveyor::Sample>& samples, int columns) {
  const conveyor::ImageShape one = samples.front().image().shape();
  const int rows = (static_cast<int>(samples.size()) + columns - 1) / columns;
  conveyor::Image sheet(rows * (one.height + kGap) + kGap, columns * (one.width + kGap) + kGap, 3);
  cv::Mat canvas(sheet.height(), sheet.width(), CV_8UC3, sheet.data());
  canvas.setTo(cv::Scalar(32, 32, 32));
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const int column = static_cast<int>(i) % columns, row = static_cast<int>(i) / columns;
    tile_of(samples[i])
        .copyTo(canvas(cv::Rect(kGap + column * (one.width + kGap), kGap + row * (one.height + kGap),
                                one.width, one.height)));
  }
  return sheet;
}

}  // namespace preview
