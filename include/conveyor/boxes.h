// Bounding boxes of a sample: corners in pixels of the sample's current image, each with a class and a
// crowd flag, kept together so that an op that drops a box drops its class and flag with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace conveyor {

// Columns [x0, x1) and rows [y0, y1) in continuous pixel coordinates: a box around pixel (0, 0) alone is
// (0, 0, 1, 1), torchvision's XYXY format.
struct Box {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;

  float width() const noexcept { return x1 - x0; }
  float height() const noexcept { return y1 - y0; }
  // 0 for an empty or inverted box.
  float area() const noexcept { return width() > 0 && height() > 0 ? width() * height() : 0.f; }
  friend bool operator==(const Box&, const Box&) = default;
};
// Batches lay boxes out as float [N, M, 4] tensors.
static_assert(sizeof(Box) == 4 * sizeof(float));

class BoxList {
 public:
  std::size_t size() const noexcept { return boxes_.size(); }
  bool empty() const noexcept { return boxes_.empty(); }
  // Forgets the boxes, keeps the capacity (a warm pipeline does not allocate for them).
  void clear() noexcept {
    boxes_.clear();
    classes_.clear();
    crowd_.clear();
  }
  void reserve(std::size_t n) {
    boxes_.reserve(n);
    classes_.reserve(n);
    crowd_.reserve(n);
  }
  void add(Box box, std::int64_t cls, bool crowd = false) {
    boxes_.push_back(box);
    classes_.push_back(cls);
    crowd_.push_back(crowd ? 1 : 0);
  }

  std::span<Box> boxes() noexcept { return boxes_; }
  std::span<const Box> boxes() const noexcept { return boxes_; }
  std::span<const std::int64_t> classes() const noexcept { return classes_; }
  // 1 for a crowd region (COCO's iscrowd), 0 otherwise.
  std::span<const std::uint8_t> crowd() const noexcept { return crowd_; }

  // Keeps the boxes i for which keep(i) is true, in order, with their classes and flags.
  template <class Keep>
  void keep_if(Keep&& keep) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < boxes_.size(); ++i) {
      if (!keep(i)) continue;
      boxes_[kept] = boxes_[i];
      classes_[kept] = classes_[i];
      crowd_[kept] = crowd_[i];
      ++kept;
    }
    boxes_.resize(kept);
    classes_.resize(kept);
    crowd_.resize(kept);
  }

  void swap(BoxList& other) noexcept {
    boxes_.swap(other.boxes_);
    classes_.swap(other.classes_);
    crowd_.swap(other.crowd_);
  }
  // Copies `other`'s boxes into this list's storage.
  void assign(const BoxList& other) {
    boxes_.assign(other.boxes_.begin(), other.boxes_.end());
    classes_.assign(other.classes_.begin(), other.classes_.end());
    crowd_.assign(other.crowd_.begin(), other.crowd_.end());
  }
  friend bool operator==(const BoxList&, const BoxList&) = default;

 private:
  std::vector<Box> boxes_;
  std::vector<std::int64_t> classes_;
  std::vector<std::uint8_t> crowd_;
};

}  // namespace conveyor
