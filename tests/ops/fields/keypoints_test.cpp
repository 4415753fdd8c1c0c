// Keypoints as a field type (conveyor/fields/keypoints.h): every geometric change maps them as it maps the
// image; a point that leaves the output becomes invisible (v = 0) and keeps the coordinates the change gave
// it, and stays invisible; a left-right mirror swaps the points named left and right (twice: back), a
// top-bottom one does not; a box that leaves the picture takes its instance's keypoints; what a source puts
// in is checked.
#include "conveyor/fields/keypoints.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/apply_geometry.h"
#include "conveyor/ops/sample_ops.h"

namespace conveyor::ops {
namespace {

// A 100 x 80 (width x height) decoded sample with one instance of "nose", "left_eye", "right_eye".
Sample sample_with_points(std::vector<Keypoint> points) {
  Sample sample;
  const ImageView image = sample.output({80, 100, 3});
  for (int y = 0; y < 80; ++y) std::fill_n(image.row(y), 300, std::uint8_t{7});
  sample.publish();
  KeypointsField& keypoints = sample.field<KeypointsField>();
  keypoints.points = 3;
  keypoints.flip_indices = std::make_shared<const std::vector<int>>(
      flip_indices_by_name(std::vector<std::string>{"nose", "left_eye", "right_eye"}));
  keypoints.values = std::move(points);
  return sample;
}

const std::vector<Keypoint>& points_of(const Sample& sample) {
  return sample.find_field<KeypointsField>()->values;
}

TEST(Keypoints, AWindowMapsThemAsItMapsTheImage) {
  Sample sample = sample_with_points({{30, 20, 2}, {50, 40, 1}, {70, 60, 2}});
  // The window (20, 10) 60 x 40 resized to 120 x 80: x -> (x - 20) * 2, y -> (y - 10) * 2.
  apply_geometry(sample, GeometryChange::crop_resize(80, 100, {20, 10, 60, 40}, 80, 120));
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{20, 20, 2}, {60, 60, 1}, {100, 100, 0}}));
}

TEST(Keypoints, APointThatLeavesTheOutputIsInvisibleKeepsItsCoordinatesAndStaysInvisible) {
  Sample sample = sample_with_points({{10, 10, 2}, {90, 70, 2}, {50, 40, 0}});
  apply_geometry(sample, GeometryChange::crop(80, 100, {20, 0, 80, 80}));
  // x -> x - 20: the first point is at -10 now, outside; its coordinates say where the crop put it.
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{-10, 10, 0}, {70, 70, 2}, {30, 40, 0}}));
  // A pad brings (-10, 10) back inside the output, onto made-up pixels: it stays invisible.
  apply_geometry(sample, GeometryChange::pad_by(80, 80, 0, 0, 20, 0));
  EXPECT_EQ(points_of(sample)[0], (Keypoint{10, 10, 0}));
  EXPECT_EQ(points_of(sample)[1], (Keypoint{90, 70, 2}));
}

TEST(Keypoints, TheOutputsEdgesAreInsideAndLabelledHiddenPointsFollowToo) {
  Sample sample = sample_with_points({{0, 0, 2}, {100, 80, 1}, {100.5f, 40, 2}});
  apply_geometry(sample, GeometryChange::resize(80, 100, 40, 50));
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{0, 0, 2}, {50, 40, 1}, {50.25f, 20, 0}}));
}

TEST(Keypoints, ALeftRightMirrorSwapsLeftAndRightATopBottomOneDoesNot) {
  Sample sample = sample_with_points({{50, 10, 2}, {40, 20, 2}, {60, 20, 1}});
  apply_geometry(sample, GeometryChange::mirror(80, 100, /*horizontal=*/true));
  // x -> 100 - x, and the eyes trade names: the left eye is the one now at 100 - 60 = 40.
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{50, 10, 2}, {40, 20, 1}, {60, 20, 2}}));
  apply_geometry(sample, GeometryChange::mirror(80, 100, /*horizontal=*/false));
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{50, 70, 2}, {40, 60, 1}, {60, 60, 2}}));
  apply_geometry(sample, GeometryChange::mirror(80, 100, /*horizontal=*/true));  // back to their names
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{50, 70, 2}, {40, 60, 2}, {60, 60, 1}}));
  // Without flip_indices the points keep their places.
  Sample unnamed = sample_with_points({{50, 10, 2}, {40, 20, 2}, {60, 20, 1}});
  unnamed.field<KeypointsField>().flip_indices = nullptr;
  apply_geometry(unnamed, GeometryChange::mirror(80, 100, true));
  EXPECT_EQ(points_of(unnamed)[1], (Keypoint{60, 20, 2}));
}

TEST(Keypoints, TheLibrarysOpsMoveThemLikeAnyChange) {
  Sample sample = sample_with_points({{50, 10, 2}, {40, 20, 2}, {60, 20, 2}});
  sample.op_position = 0;
  flip_horizontal(1.0).apply(sample);
  EXPECT_EQ(points_of(sample)[1], (Keypoint{40, 20, 2}));  // the right eye's place, now called left
  sample.op_position = 1;
  center_crop(40, 40).apply(sample);  // the window (30, 20) 40 x 40
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{20, -10, 0}, {10, 0, 2}, {30, 0, 2}}));
}

TEST(Keypoints, ABoxThatLeavesThePictureTakesItsInstancesKeypoints) {
  Sample sample =
      sample_with_points({{10, 10, 2}, {12, 10, 2}, {8, 10, 2}, {80, 60, 2}, {82, 60, 2}, {78, 60, 2}});
  sample.boxes.add({5, 5, 15, 15}, 1);
  sample.boxes.add({75, 55, 85, 65}, 2);
  apply_geometry(sample, GeometryChange::crop(80, 100, {50, 40, 50, 40}));
  ASSERT_EQ(sample.boxes.size(), 1u);
  EXPECT_EQ(sample.boxes.classes()[0], 2);
  EXPECT_EQ(points_of(sample), (std::vector<Keypoint>{{30, 20, 2}, {32, 20, 2}, {28, 20, 2}}));
}

TEST(Keypoints, FlipIndicesPairLeftAndRightByName) {
  const std::vector<std::string> coco{
      "nose",           "left_eye",   "right_eye",   "left_ear",   "right_ear",   "left_shoulder",
      "right_shoulder", "left_elbow", "right_elbow", "left_wrist", "right_wrist", "left_hip",
      "right_hip",      "left_knee",  "right_knee",  "left_ankle", "right_ankle"};
  EXPECT_EQ(flip_indices_by_name(coco),
            (std::vector<int>{0, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 16, 15}));
  EXPECT_EQ(flip_indices_by_name(std::vector<std::string>{"LeftHand", "tail", "RightHand", "left_only"}),
            (std::vector<int>{2, 1, 0, 3}));
}

TEST(Keypoints, WhatASourcePutsInIsChecked) {
  Sample sample = sample_with_points({{1, 2, 2}, {3, 4, 1}, {5, 6, 0}});
  EXPECT_NO_THROW(sample.find_field<KeypointsField>()->check_read());
  KeypointsField& keypoints = sample.field<KeypointsField>();
  keypoints.values.push_back({1, 1, 2});  // not a whole instance
  EXPECT_THROW(keypoints.check_read(), InvalidArgument);
  keypoints.values.resize(3);
  keypoints.values[1].v = 3;
  EXPECT_THROW(keypoints.check_read(), InvalidArgument);
  keypoints.values[1] = {std::numeric_limits<float>::infinity(), 0, 2};
  EXPECT_THROW(keypoints.check_read(), InvalidArgument);
  keypoints.values[1] = {0, 0, 2};
  keypoints.flip_indices = std::make_shared<const std::vector<int>>(std::vector<int>{0, 3, 1});
  EXPECT_THROW(keypoints.check_read(), InvalidArgument);
  EXPECT_THROW(keypoints.add_instance(std::vector<Keypoint>(2)), InvalidArgument);
}

}  // namespace
}  // namespace conveyor::ops
