// A user's own field type, for the tests that prove the field design open: one mark per instance (a point
// and an id), aligned with the sample's boxes. Geometry maps the points (a mirror mirrors them); a box that
// leaves the picture takes its mark with it. Batches: "marks" (N, M, 3) float32 x, y, id padded with -1, and
// "mark_counts" (N) int64. Written only against the public field interface (conveyor/fields/field.h).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "conveyor/fields/field.h"

namespace conveyor::testing {

class InstanceMarks final : public Field {
 public:
  static constexpr std::string_view kName = "marks";

  std::vector<std::array<float, 3>> marks;  // x, y, id

  std::string_view name() const noexcept override { return kName; }
  bool empty() const noexcept override { return marks.empty(); }
  void clear() noexcept override { marks.clear(); }
  std::unique_ptr<Field> clone() const override { return std::make_unique<InstanceMarks>(*this); }
  void move(const ops::GeometryChange& change, FieldMove& context) override;
  std::size_t instances() const noexcept override { return marks.size(); }
  void keep_instances(std::span<const std::uint8_t> keep) override;
  std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                         std::span<std::byte> fixed) const override;
  void tensors(std::vector<BatchTensor>& out) const override;
};

}  // namespace conveyor::testing
