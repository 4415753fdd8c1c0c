// Bounding boxes as a field: corners (XYXY, continuous pixel coordinates of the current image) with a class
// and a crowd flag each (conveyor/boxes.h). Geometry: corners mapped, clipped to the output; a box left with
// less than FieldOptions::min_box_area (or min_box_visibility of its mapped area) in the picture is dropped,
// and with it that instance in every other per-instance field (keypoints). Batches: "boxes" (N, M, 4) float32
// padded with zeros, "box_classes" (N, M) int64 padded with -1, "box_crowd" (N, M) uint8, "box_counts" (N)
// int64; M is the batch's most boxes in one sample, or BatchOptions::max_boxes (a sample with more fails).
#pragma once

#include <string_view>

#include "conveyor/boxes.h"
#include "conveyor/fields/field.h"

namespace conveyor {

class BoxesField final : public Field {
 public:
  static constexpr std::string_view kName = "boxes";

  BoxList list;

  std::string_view name() const noexcept override { return kName; }
  bool empty() const noexcept override { return list.empty(); }
  void clear() noexcept override { list.clear(); }
  std::unique_ptr<Field> clone() const override { return std::make_unique<BoxesField>(*this); }
  void check_read() const override;
  void move(const ops::GeometryChange& change, FieldMove& context) override;
  std::size_t instances() const noexcept override { return list.size(); }
  void keep_instances(std::span<const std::uint8_t> keep) override;
  std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                         std::span<std::byte> fixed) const override;
  void tensors(std::vector<BatchTensor>& out) const override;
};

}  // namespace conveyor
