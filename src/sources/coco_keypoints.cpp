#include "src/sources/coco_keypoints.h"

#include <vector>

#include "conveyor/error.h"
#include "conveyor/fields/keypoints.h"

namespace conveyor::detail {
namespace {

using nlohmann::json;

class CocoKeypoints final : public CocoInstanceReader {
 public:
  CocoKeypoints(int points, std::shared_ptr<const std::vector<int>> flip)
      : points_(points), flip_(std::move(flip)) {}

  void add(const json& annotation, const std::string& what) override {
    const auto it = annotation.find("keypoints");
    if (it == annotation.end()) {
      values_.resize(values_.size() + static_cast<std::size_t>(points_));  // not labelled: v = 0
      return;
    }
    if (!it->is_array() || it->size() != 3 * static_cast<std::size_t>(points_))
      throw InvalidArgument("coco_detection: " + what + "'s keypoints are not " + std::to_string(points_) +
                            " times [x, y, v]: " + it->dump().substr(0, 200));
    for (std::size_t k = 0; k < static_cast<std::size_t>(points_); ++k) {
      const json& x = (*it)[3 * k];
      const json& y = (*it)[3 * k + 1];
      const json& v = (*it)[3 * k + 2];
      // v as COCO writes it (an integer), or a number of that value (2.0).
      const double visibility = v.is_number() ? v.get<double>() : -1;
      if (!x.is_number() || !y.is_number() || !(visibility == 0 || visibility == 1 || visibility == 2))
        throw InvalidArgument("coco_detection: " + what + "'s keypoint " + std::to_string(k) +
                              " is not x, y, v in 0..2: " + x.dump() + ", " + y.dump() + ", " + v.dump());
      values_.push_back({x.get<float>(), y.get<float>(), static_cast<float>(visibility)});
    }
  }

  void read(std::size_t first, std::size_t end, Sample& sample) const override {
    KeypointsField& field = sample.field<KeypointsField>();
    field.points = points_;
    field.flip_indices = flip_;
    const auto k = static_cast<std::size_t>(points_);
    field.values.assign(values_.begin() + static_cast<std::ptrdiff_t>(first * k),
                        values_.begin() + static_cast<std::ptrdiff_t>(end * k));
  }

  std::shared_ptr<const Field> prototype() const override {
    auto field = std::make_shared<KeypointsField>();
    field->points = points_;
    field->flip_indices = flip_;
    return field;
  }

 private:
  int points_;
  std::shared_ptr<const std::vector<int>> flip_;
  std::vector<Keypoint> values_;  // K per kept annotation, in the source's order
};

}  // namespace

std::unique_ptr<CocoInstanceReader> coco_keypoints(const json& root, const std::string& where) {
  const auto categories = root.find("categories");
  if (categories == root.end() || !categories->is_array()) return nullptr;
  std::vector<std::string> names;
  bool found = false;
  for (const json& category : *categories) {
    const auto listed = category.find("keypoints");
    if (listed == category.end()) continue;
    std::vector<std::string> these;
    try {
      these = listed->get<std::vector<std::string>>();
    } catch (const json::exception&) {
      throw InvalidArgument("coco_detection: '" + where + "' has a category whose keypoints are not names");
    }
    if (found && these != names)
      throw InvalidArgument("coco_detection: '" + where + "' has categories with different keypoints");
    names = std::move(these);
    found = true;
  }
  if (!found || names.empty()) return nullptr;
  return std::make_unique<CocoKeypoints>(
      static_cast<int>(names.size()), std::make_shared<const std::vector<int>>(flip_indices_by_name(names)));
}

}  // namespace conveyor::detail
