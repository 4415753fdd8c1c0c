// Multi-label tags as a field: the class ids of the sample. Geometry leaves them alone. Batches: "multi_hot"
// (N, K) uint8 rows, K = BatchOptions::num_classes (which alone makes every batch carry the rows); a tag
// outside 0..K-1, or tags in a batch without num_classes, fail the sample in the "batch" stage.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "conveyor/fields/field.h"

namespace conveyor {

class TagsField final : public Field {
 public:
  static constexpr std::string_view kName = "tags";

  std::vector<std::int64_t> tags;

  std::string_view name() const noexcept override { return kName; }
  bool empty() const noexcept override { return tags.empty(); }
  void clear() noexcept override { tags.clear(); }
  std::unique_ptr<Field> clone() const override { return std::make_unique<TagsField>(*this); }
  bool follows_geometry() const noexcept override { return false; }
  void move(const ops::GeometryChange&, FieldMove&) override {}
  bool wanted_by(const BatchOptions& options) const noexcept override { return options.num_classes > 0; }
  std::size_t batch_bytes(const FieldBatchLayout& layout) const override;
  std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                         std::span<std::byte> fixed) const override;
  void tensors(std::vector<BatchTensor>& out) const override;
};

}  // namespace conveyor
