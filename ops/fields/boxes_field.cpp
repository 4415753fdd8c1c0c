#include "conveyor/fields/boxes_field.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>

#include "conveyor/error.h"
#include "conveyor/fields.h"
#include "conveyor/ops/field_geometry.h"
#include "src/core/host_allocation.h"

namespace conveyor {
namespace {

constexpr std::string_view kBoxCounts = "box_counts";

// The boxes of one batch buffer: each slot's BoxList until the batch is complete (swapped in from the
// sample, no copy), then packed into padded tensors in storage of the pool's memory that grows, by doubling,
// when a batch has more boxes per sample than any before, and is kept for later batches.
class BoxesBatch final : public FieldBatch {
 public:
  explicit BoxesBatch(const FieldBatchLayout& layout)
      : slots_(std::make_unique<BoxList[]>(layout.capacity)),
        capacity_(layout.capacity),
        fixed_(layout.options.max_boxes),
        memory_(layout.memory),
        pinned_(layout.memory && layout.memory->page_locked()) {
    // Room for the fixed size, or a first guess, so that a warm pool does not grow.
    reserve(capacity_, fixed_ > 0 ? fixed_ : 8);
  }

  std::string_view name() const noexcept override { return BoxesField::kName; }

  void take(Field* field, std::size_t slot) override {
    if (field == nullptr) {
      slots_[slot].clear();
      return;
    }
    BoxList& list = static_cast<BoxesField*>(field)->list;
    if (fixed_ != 0 && list.size() > fixed_)
      throw InvalidArgument("the sample has " + std::to_string(list.size()) +
                            " boxes, more than BatchOptions::max_boxes (" + std::to_string(fixed_) + ")");
    slots_[slot].swap(list);  // the slot's old list goes to the sample, which recycles it
  }

  void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept override {
    static_cast<BoxesBatch&>(target).slots_[to].swap(slots_[from]);
  }

  void copy_out(std::size_t slot, Field& field) const override {
    static_cast<BoxesField&>(field).list.assign(slots_[slot]);
  }

  void copy_in(const Field* field, std::size_t slot) override {
    if (field == nullptr) {
      slots_[slot].clear();
      return;
    }
    slots_[slot].assign(static_cast<const BoxesField*>(field)->list);
  }

  void finish(std::size_t size, std::vector<BatchTensor>& out) override {
    std::size_t most = fixed_;
    if (most == 0)
      for (std::size_t i = 0; i < size; ++i) most = std::max(most, slots_[i].size());
    reserve(size, most);
    for (std::size_t i = 0; i < size; ++i) {
      const BoxList& list = slots_[i];
      const std::size_t n = list.size();  // at most `most` (take() refuses more than a fixed number)
      Box* boxes = boxes_ + i * most;
      std::int64_t* classes = classes_ + i * most;
      std::uint8_t* crowd = crowd_ + i * most;
      std::copy(list.boxes().begin(), list.boxes().end(), boxes);
      std::copy(list.classes().begin(), list.classes().end(), classes);
      std::copy(list.crowd().begin(), list.crowd().end(), crowd);
      std::fill(boxes + n, boxes + most, Box{});
      std::fill(classes + n, classes + most, -1);
      std::fill(crowd + n, crowd + most, 0);
      counts_[i] = static_cast<std::int64_t>(n);
    }
    const auto n = static_cast<std::int64_t>(size), m = static_cast<std::int64_t>(most);
    out.push_back({.field = BoxesField::kName,
                   .name = "boxes",
                   .view = TensorView::contiguous(boxes_, DType::float32, {n, m, 4}, -1, pinned_),
                   .padding = {.dim = 1, .value = 0, .counts = kBoxCounts},
                   .follows_geometry = true});
    out.push_back({.field = BoxesField::kName,
                   .name = "box_classes",
                   .view = TensorView::contiguous(classes_, DType::int64, {n, m}, -1, pinned_),
                   .padding = {.dim = 1, .value = -1, .counts = kBoxCounts},
                   .follows_geometry = true});
    out.push_back({.field = BoxesField::kName,
                   .name = "box_crowd",
                   .view = TensorView::contiguous(crowd_, DType::uint8, {n, m}, -1, pinned_),
                   .padding = {.dim = 1, .value = 0, .counts = kBoxCounts},
                   .follows_geometry = true});
    out.push_back({.field = BoxesField::kName,
                   .name = kBoxCounts,
                   .view = TensorView::contiguous(counts_, DType::int64, {n}, -1, pinned_),
                   .follows_geometry = true});
  }

 private:
  // Boxes, classes, counts, crowd flags, each 64-byte aligned; at least one box a sample so that no pointer
  // is null.
  void reserve(std::size_t samples, std::size_t max_boxes) {
    const std::size_t boxes = std::max<std::size_t>(samples * max_boxes, 1);
    const std::size_t box_bytes = detail::HostAllocation::round_up(boxes * sizeof(Box));
    const std::size_t class_bytes = detail::HostAllocation::round_up(boxes * sizeof(std::int64_t));
    const std::size_t count_bytes =
        detail::HostAllocation::round_up(std::max<std::size_t>(samples, 1) * sizeof(std::int64_t));
    const std::size_t bytes = box_bytes + class_bytes + count_bytes + detail::HostAllocation::round_up(boxes);
    if (allocation_.size() < bytes)
      allocation_ = detail::HostAllocation(std::max(bytes, 2 * allocation_.size()), memory_);
    std::byte* const base = allocation_.data();
    boxes_ = reinterpret_cast<Box*>(base);
    classes_ = reinterpret_cast<std::int64_t*>(base + box_bytes);
    counts_ = reinterpret_cast<std::int64_t*>(base + box_bytes + class_bytes);
    crowd_ = reinterpret_cast<std::uint8_t*>(base + box_bytes + class_bytes + count_bytes);
  }

  std::unique_ptr<BoxList[]> slots_;
  std::size_t capacity_;
  std::size_t fixed_;  // 0: each batch pads to its own most
  std::shared_ptr<HostMemoryResource> memory_;
  bool pinned_;
  detail::HostAllocation allocation_;
  Box* boxes_ = nullptr;
  std::int64_t* classes_ = nullptr;
  std::int64_t* counts_ = nullptr;
  std::uint8_t* crowd_ = nullptr;
};

}  // namespace

void BoxesField::check_read() const {
  for (const Box& box : list.boxes())
    if (!std::isfinite(box.x0) || !std::isfinite(box.y0) || !std::isfinite(box.x1) || !std::isfinite(box.y1))
      throw InvalidArgument("a box with a corner that is not a finite number");
}

void BoxesField::move(const ops::GeometryChange& change, FieldMove& context) {
  if (change.identity()) return;
  if (change.kind == ops::GeometryChange::Kind::mirror) {
    change.horizontal ? ops::flip_boxes_horizontal(list, change.image_width)
                      : ops::flip_boxes_vertical(list, change.image_height);
    return;
  }
  const std::span<Box> boxes = list.boxes();
  std::vector<std::uint8_t>& dropped = context.dropped;
  for (std::size_t i = 0; i < boxes.size(); ++i) {
    if (ops::crop_resize_box(boxes[i], change.window, change.out_width, change.out_height, context.options))
      continue;
    if (dropped.size() <= i) dropped.resize(boxes.size(), 0);
    dropped[i] = 1;
  }
}

void BoxesField::keep_instances(std::span<const std::uint8_t> keep) {
  list.keep_if([&](std::size_t i) { return i >= keep.size() || keep[i] != 0; });
}

std::unique_ptr<FieldBatch> BoxesField::make_batch(const FieldBatchLayout& layout,
                                                   std::span<std::byte>) const {
  return std::make_unique<BoxesBatch>(layout);
}

void BoxesField::tensors(std::vector<BatchTensor>& out) const {
  const auto n = static_cast<std::int64_t>(list.size());
  auto* boxes = const_cast<Box*>(list.boxes().data());
  auto* classes = const_cast<std::int64_t*>(list.classes().data());
  auto* crowd = const_cast<std::uint8_t*>(list.crowd().data());
  out.push_back(
      {.field = kName, .name = "boxes", .view = TensorView::contiguous(boxes, DType::float32, {n, 4})});
  out.push_back(
      {.field = kName, .name = "box_classes", .view = TensorView::contiguous(classes, DType::int64, {n})});
  out.push_back(
      {.field = kName, .name = "box_crowd", .view = TensorView::contiguous(crowd, DType::uint8, {n})});
}

}  // namespace conveyor
