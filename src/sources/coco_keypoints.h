// COCO's keypoints (person_keypoints_*.json): read with the boxes, for the same annotations (the keypoints
// kind's entry in field_kinds.cpp names this reader).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "src/sources/coco_instance_reader.h"

namespace conveyor::detail {

// A reader when a category lists keypoint names ("keypoints": ["nose", "left_eye", ...]; every category that
// lists them must list the same), else null. K is their count; a mirror swaps the points named left and
// right. An annotation without "keypoints" (of a category without them) gets K points with v = 0; one whose
// list is not 3 K numbers, or whose visibilities are not 0, 1 or 2, is an InvalidArgument naming it.
std::unique_ptr<CocoInstanceReader> coco_keypoints(const nlohmann::json& root, const std::string& where);

}  // namespace conveyor::detail
