#include "support/instance_marks.h"

#include <algorithm>
#include <memory>

namespace conveyor::testing {
namespace {

// Each slot's marks until the batch is complete, then padded into one (capacity, most, 3) array.
class MarksBatch final : public FieldBatch {
 public:
  explicit MarksBatch(std::size_t capacity) : slots_(capacity) {}

  std::string_view name() const noexcept override { return InstanceMarks::kName; }
  void take(Field* field, std::size_t slot) override {
    slots_[slot] = field ? static_cast<InstanceMarks*>(field)->marks : std::vector<std::array<float, 3>>{};
  }
  void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept override {
    static_cast<MarksBatch&>(target).slots_[to].swap(slots_[from]);
  }
  void copy_out(std::size_t slot, Field& field) const override {
    static_cast<InstanceMarks&>(field).marks = slots_[slot];
  }
  void copy_in(const Field* field, std::size_t slot) override {
    slots_[slot] =
        field ? static_cast<const InstanceMarks*>(field)->marks : std::vector<std::array<float, 3>>{};
  }
  void finish(std::size_t size, std::vector<BatchTensor>& out) override {
    std::size_t most = 0;
    for (std::size_t i = 0; i < size; ++i) most = std::max(most, slots_[i].size());
    packed_.assign(std::max<std::size_t>(size * most, 1), {-1, -1, -1});
    counts_.assign(std::max<std::size_t>(size, 1), 0);
    for (std::size_t i = 0; i < size; ++i) {
      std::copy(slots_[i].begin(), slots_[i].end(), packed_.begin() + static_cast<std::ptrdiff_t>(i * most));
      counts_[i] = static_cast<std::int64_t>(slots_[i].size());
    }
    const auto n = static_cast<std::int64_t>(size), m = static_cast<std::int64_t>(most);
    out.push_back({.field = InstanceMarks::kName,
                   .name = "marks",
                   .view = TensorView::contiguous(packed_.data(), DType::float32, {n, m, 3}),
                   .padding = {.dim = 1, .value = -1, .counts = "mark_counts"},
                   .follows_geometry = true});
    out.push_back({.field = InstanceMarks::kName,
                   .name = "mark_counts",
                   .view = TensorView::contiguous(counts_.data(), DType::int64, {n})});
  }

 private:
  std::vector<std::vector<std::array<float, 3>>> slots_;
  std::vector<std::array<float, 3>> packed_;
  std::vector<std::int64_t> counts_;
};

}  // namespace

void InstanceMarks::move(const ops::GeometryChange& change, FieldMove&) {
  for (std::array<float, 3>& mark : marks) {
    mark[0] = static_cast<float>(change.map_x(mark[0]));
    mark[1] = static_cast<float>(change.map_y(mark[1]));
  }
}

void InstanceMarks::keep_instances(std::span<const std::uint8_t> keep) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < marks.size(); ++i)
    if (i >= keep.size() || keep[i] != 0) marks[kept++] = marks[i];
  marks.resize(kept);
}

std::unique_ptr<FieldBatch> InstanceMarks::make_batch(const FieldBatchLayout& layout,
                                                      std::span<std::byte>) const {
  return std::make_unique<MarksBatch>(layout.capacity);
}

void InstanceMarks::tensors(std::vector<BatchTensor>& out) const {
  out.push_back(
      {.field = kName,
       .name = "marks",
       .view = TensorView::contiguous(const_cast<std::array<float, 3>*>(marks.data()), DType::float32,
                                      {static_cast<std::int64_t>(marks.size()), 3})});
}

}  // namespace conveyor::testing
