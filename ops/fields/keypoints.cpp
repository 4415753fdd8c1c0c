#include "conveyor/fields/keypoints.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>
#include <string>

#include "conveyor/error.h"
#include "src/core/host_allocation.h"

namespace conveyor {
namespace {

constexpr std::string_view kKeypointCounts = "keypoint_counts";

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The keypoints of one batch buffer: each slot's points until the batch is complete (swapped in from the
// sample, no copy), then padded into (N, M, K, 3) in storage of the pool's memory that grows by doubling and
// is kept, as the boxes' is. K is the declared one, or the first sample's.
class KeypointsBatch final : public FieldBatch {
 public:
  KeypointsBatch(const FieldBatchLayout& layout, int points)
      : slots_(std::make_unique<std::vector<Keypoint>[]>(layout.capacity)),
        points_(points),
        fixed_(layout.options.max_boxes),
        memory_(layout.memory),
        pinned_(layout.memory && layout.memory->page_locked()) {}

  std::string_view name() const noexcept override { return KeypointsField::kName; }

  void take(Field* field, std::size_t slot) override {
    if (field == nullptr) {
      slots_[slot].clear();
      return;
    }
    auto& keypoints = static_cast<KeypointsField&>(*field);
    if (!keypoints.values.empty()) {
      if (points_ == 0) points_ = keypoints.points;
      if (keypoints.points != points_)
        throw ShapeMismatch("the sample's keypoints have " + std::to_string(keypoints.points) +
                            " points per instance, the batch's " + std::to_string(points_));
      if (fixed_ != 0 && keypoints.instances() > fixed_)
        throw InvalidArgument("the sample has " + std::to_string(keypoints.instances()) +
                              " keypoint instances, more than BatchOptions::max_boxes (" +
                              std::to_string(fixed_) + ")");
    }
    slots_[slot].swap(keypoints.values);  // the slot's old vector goes to the sample, which recycles it
  }

  void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept override {
    static_cast<KeypointsBatch&>(target).slots_[to].swap(slots_[from]);
  }

  void copy_out(std::size_t slot, Field& field) const override {
    auto& keypoints = static_cast<KeypointsField&>(field);
    keypoints.points = points_;
    keypoints.values.assign(slots_[slot].begin(), slots_[slot].end());
  }

  void copy_in(const Field* field, std::size_t slot) override {
    if (field == nullptr) {
      slots_[slot].clear();
      return;
    }
    const auto& values = static_cast<const KeypointsField*>(field)->values;
    slots_[slot].assign(values.begin(), values.end());
  }

  void finish(std::size_t size, std::vector<BatchTensor>& out) override {
    const std::size_t k = static_cast<std::size_t>(std::max(points_, 0));
    std::size_t most = fixed_;
    if (most == 0 && k > 0)
      for (std::size_t i = 0; i < size; ++i) most = std::max(most, slots_[i].size() / k);
    reserve(size, most * k);
    for (std::size_t i = 0; i < size; ++i) {
      Keypoint* row = points_area_ + i * most * k;
      std::copy(slots_[i].begin(), slots_[i].end(), row);
      std::fill(row + slots_[i].size(), row + most * k, Keypoint{});
      counts_[i] = k > 0 ? static_cast<std::int64_t>(slots_[i].size() / k) : 0;
    }
    const auto n = static_cast<std::int64_t>(size);
    out.push_back({.field = KeypointsField::kName,
                   .name = "keypoints",
                   .view = TensorView::contiguous(
                       points_area_, DType::float32,
                       {n, static_cast<std::int64_t>(most), static_cast<std::int64_t>(k), 3}, -1, pinned_),
                   .padding = {.dim = 1, .value = 0, .counts = kKeypointCounts},
                   .follows_geometry = true});
    out.push_back({.field = KeypointsField::kName,
                   .name = kKeypointCounts,
                   .view = TensorView::contiguous(counts_, DType::int64, {n}, -1, pinned_),
                   .follows_geometry = true});
  }

 private:
  void reserve(std::size_t samples, std::size_t points_per_sample) {
    const std::size_t point_bytes = detail::HostAllocation::round_up(
        std::max<std::size_t>(samples * points_per_sample, 1) * sizeof(Keypoint));
    const std::size_t bytes = point_bytes + detail::HostAllocation::round_up(
                                                std::max<std::size_t>(samples, 1) * sizeof(std::int64_t));
    if (allocation_.size() < bytes)
      allocation_ = detail::HostAllocation(std::max(bytes, 2 * allocation_.size()), memory_);
    points_area_ = reinterpret_cast<Keypoint*>(allocation_.data());
    counts_ = reinterpret_cast<std::int64_t*>(allocation_.data() + point_bytes);
  }

  std::unique_ptr<std::vector<Keypoint>[]> slots_;
  int points_;
  std::size_t fixed_;  // 0: each batch pads to its own most instances
  std::shared_ptr<HostMemoryResource> memory_;
  bool pinned_;
  detail::HostAllocation allocation_;
  Keypoint* points_area_ = nullptr;
  std::int64_t* counts_ = nullptr;
};

}  // namespace

void KeypointsField::add_instance(std::span<const Keypoint> instance) {
  if (points <= 0 || instance.size() != static_cast<std::size_t>(points))
    throw InvalidArgument("KeypointsField::add_instance: " + std::to_string(instance.size()) +
                          " keypoints for instances of " + std::to_string(points));
  values.insert(values.end(), instance.begin(), instance.end());
}

void KeypointsField::check_read() const {
  if (points <= 0 || values.size() % static_cast<std::size_t>(points) != 0)
    throw InvalidArgument("keypoints: " + std::to_string(values.size()) +
                          " points are no whole instances of " + std::to_string(points));
  for (const Keypoint& point : values) {
    if (!std::isfinite(point.x) || !std::isfinite(point.y))
      throw InvalidArgument("a keypoint whose coordinates are not finite numbers");
    if (point.v != 0 && point.v != 1 && point.v != 2)
      throw InvalidArgument("a keypoint's visibility is " + std::to_string(point.v) + ", not 0, 1 or 2");
  }
  if (!flip_indices) return;
  // Each entry names one of the K points (what a mirror reads); that they form a permutation is the source's
  // promise (flip_indices_by_name makes one), not checked per sample.
  if (flip_indices->size() != static_cast<std::size_t>(points) ||
      std::any_of(flip_indices->begin(), flip_indices->end(), [&](int k) { return k < 0 || k >= points; }))
    throw InvalidArgument("keypoints: flip_indices does not name the " + std::to_string(points) + " points");
}

void KeypointsField::move(const ops::GeometryChange& change, FieldMove&) {
  if (change.identity()) return;
  const double width = change.output_width(), height = change.output_height();
  for (Keypoint& point : values) {
    const double x = change.map_x(point.x), y = change.map_y(point.y);
    point.x = static_cast<float>(x);
    point.y = static_cast<float>(y);
    if (!(x >= 0 && x <= width && y >= 0 && y <= height)) point.v = 0;
  }
  // A left-right mirror swaps the points named left and right; a top-bottom one keeps the names (as
  // detectron2 and torchvision's references do: only horizontal flips count).
  if (change.kind != ops::GeometryChange::Kind::mirror || !change.horizontal || !flip_indices || points <= 0)
    return;
  // The points named left and right trade places within each instance: point k takes point flip[k]'s.
  const std::vector<int>& flip = *flip_indices;
  const auto k = static_cast<std::size_t>(points);
  thread_local std::vector<Keypoint>
      instance;  // one instance's points; keeps its capacity from sample to sample
  for (std::size_t first = 0; first + k <= values.size(); first += k) {
    instance.assign(values.begin() + static_cast<std::ptrdiff_t>(first),
                    values.begin() + static_cast<std::ptrdiff_t>(first + k));
    for (std::size_t i = 0; i < k; ++i) values[first + i] = instance[static_cast<std::size_t>(flip[i])];
  }
}

void KeypointsField::keep_instances(std::span<const std::uint8_t> keep) {
  const std::size_t k = static_cast<std::size_t>(points), n = instances();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i < keep.size() && keep[i] == 0) continue;
    if (kept != i)
      std::copy_n(values.begin() + static_cast<std::ptrdiff_t>(i * k), k,
                  values.begin() + static_cast<std::ptrdiff_t>(kept * k));
    ++kept;
  }
  values.resize(kept * k);
}

std::unique_ptr<FieldBatch> KeypointsField::make_batch(const FieldBatchLayout& layout,
                                                       std::span<std::byte>) const {
  return std::make_unique<KeypointsBatch>(layout, points);
}

void KeypointsField::tensors(std::vector<BatchTensor>& out) const {
  out.push_back({.field = kName,
                 .name = "keypoints",
                 .view = TensorView::contiguous(const_cast<Keypoint*>(values.data()), DType::float32,
                                                {static_cast<std::int64_t>(instances()), points, 3}),
                 .follows_geometry = true});
}

std::vector<int> flip_indices_by_name(std::span<const std::string> names) {
  std::vector<int> flip(names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    flip[i] = static_cast<int>(i);
    const std::string name = lower(names[i]);
    for (const auto& [from, to] : {std::pair{"left", "right"}, std::pair{"right", "left"}}) {
      const std::size_t at = name.find(from);
      if (at == std::string::npos) continue;
      const std::string partner = name.substr(0, at) + to + name.substr(at + std::string_view(from).size());
      for (std::size_t j = 0; j < names.size(); ++j)
        if (j != i && lower(names[j]) == partner) flip[i] = static_cast<int>(j);
      break;
    }
  }
  return flip;
}

}  // namespace conveyor
