#include "support/scenes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "conveyor/ops/decode_png.h"
#include "conveyor/random.h"
#include "conveyor/sample.h"
#include "support/test_images.h"

namespace conveyor::testing {
namespace {

std::array<std::uint8_t, 3> colour_of(std::int64_t cls) {
  // Far apart and far from the background's mid greys: the test can tell a fill from its neighbours.
  static constexpr std::array<std::array<std::uint8_t, 3>, 6> kColours{
      {{250, 20, 20}, {20, 240, 30}, {30, 40, 250}, {250, 240, 20}, {240, 20, 240}, {20, 240, 240}}};
  return kColours[static_cast<std::size_t>(cls) % kColours.size()];
}

}  // namespace

std::array<std::uint8_t, 3> Scene::colour(std::int64_t cls) const { return colour_of(cls); }

void Scene::add_keypoints(Sample& sample) const {
  static const std::vector<std::string> names{"left", "centre", "right"};
  KeypointsField& field = sample.field<KeypointsField>();
  field.points = 3;
  field.flip_indices = std::make_shared<const std::vector<int>>(flip_indices_by_name(names));
  field.values = keypoints;
}

Scene make_scene(int height, int width, int count, std::uint64_t seed, MaskType type) {
  Scene scene;
  scene.image = make_picture(height, width, 3, seed);
  scene.mask = Mask({height, width, type});
  const MaskView mask = scene.mask.view();
  for (int y = 0; y < height; ++y)
    std::memset(mask.row(y), 0, static_cast<std::size_t>(width) * mask.element_size());
  Rng rng(seed, 0x5CE7E);
  const int columns = std::max(1, static_cast<int>(std::ceil(std::sqrt(count))));
  const int rows = (count + columns - 1) / columns;
  const int cell_w = width / columns, cell_h = height / rows;
  for (int c = 1; c <= count; ++c) {
    const int cx = (c - 1) % columns * cell_w, cy = (c - 1) / columns * cell_h;
    const int w = 8 + static_cast<int>(rng.below(static_cast<std::uint64_t>(std::max(1, cell_w - 10))));
    const int h = 8 + static_cast<int>(rng.below(static_cast<std::uint64_t>(std::max(1, cell_h - 10))));
    const int x0 = cx + static_cast<int>(rng.below(static_cast<std::uint64_t>(std::max(1, cell_w - w))));
    const int y0 = cy + static_cast<int>(rng.below(static_cast<std::uint64_t>(std::max(1, cell_h - h))));
    const std::uint32_t value =
        type == MaskType::uint16 ? 1000u + static_cast<std::uint32_t>(c) - 1 : static_cast<std::uint32_t>(c);
    const auto fill = colour_of(value);
    for (int y = y0; y < y0 + h; ++y) {
      for (int x = x0; x < x0 + w; ++x) {
        std::memcpy(scene.image.view().at(y, x), fill.data(), 3);
        if (type == MaskType::uint16) {
          const auto v = static_cast<std::uint16_t>(value);
          std::memcpy(mask.row(y) + 2 * x, &v, 2);
        } else {
          mask.row(y)[x] = static_cast<std::uint8_t>(value);
        }
      }
    }
    scene.boxes.add({static_cast<float>(x0), static_cast<float>(y0), static_cast<float>(x0 + w),
                     static_cast<float>(y0 + h)},
                    static_cast<std::int64_t>(value));
    const float middle = static_cast<float>(y0) + static_cast<float>(h) / 2;
    scene.keypoints.push_back({static_cast<float>(x0) + 0.5f, middle, 2});
    scene.keypoints.push_back({static_cast<float>(x0) + static_cast<float>(w) / 2, middle, 2});
    scene.keypoints.push_back({static_cast<float>(x0 + w) - 0.5f, middle, 2});
  }
  scene.jpeg = encode_jpeg(scene.image.view(), 95, Subsampling::s444);
  scene.mask_png = ops::encode_png(std::as_const(scene.mask).view());
  return scene;
}

std::optional<Box> mask_box(ConstMaskView mask, std::uint32_t value) {
  int x0 = mask.width, y0 = mask.height, x1 = -1, y1 = -1;
  for (int y = 0; y < mask.height; ++y)
    for (int x = 0; x < mask.width; ++x)
      if (mask.at(y, x) == value) {
        x0 = std::min(x0, x);
        y0 = std::min(y0, y);
        x1 = std::max(x1, x);
        y1 = std::max(y1, y);
      }
  if (x1 < 0) return std::nullopt;
  return Box{static_cast<float>(x0), static_cast<float>(y0), static_cast<float>(x1 + 1),
             static_cast<float>(y1 + 1)};
}

namespace {

class SceneSource final : public SampleSource {
 public:
  SceneSource(std::size_t count, int height, int width) {
    for (std::size_t i = 0; i < count; ++i)
      scenes_.push_back(make_scene(height, width, 1 + static_cast<int>(i % 4), i + 1));
  }
  std::size_t size() const override { return scenes_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override {
    sample.path = "scene " + std::to_string(i);
    sample.label = static_cast<std::int64_t>(i);
    sample.encoded = scenes_[i].jpeg;
    sample.encoded_mask = scenes_[i].mask_png;
    sample.boxes.assign(scenes_[i].boxes);
    sample.tags = {static_cast<std::int64_t>(i % 3), 5};
  }
  FieldSet fields() const override { return {.mask = true, .boxes = true, .tags = true}; }
  std::string describe() const override { return "scenes " + std::to_string(scenes_.size()); }

 private:
  std::vector<Scene> scenes_;
};

}  // namespace

std::shared_ptr<const SampleSource> scene_source(std::size_t count, int height, int width) {
  return std::make_shared<SceneSource>(count, height, width);
}

}  // namespace conveyor::testing
