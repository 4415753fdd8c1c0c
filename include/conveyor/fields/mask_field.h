// A segmentation mask as a field: one class id per pixel, 8 or 16 bits, read as a PNG (`encoded`) and decoded
// with the image by the decoding ops, through the same window. Geometry: nearest neighbour with pixel centres
// aligned as the image's linear resize (class ids are never blended); pixels made up outside the image hold
// FieldOptions::mask_fill under constant padding, else follow the image's border rule. Batches: (N, H, W)
// uint8 or uint16 "masks", at the image's height and width, written in place like pixels when the last op
// produces the batch's mask shape.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "conveyor/fields/field.h"
#include "conveyor/fields/ping_pong_buffer.h"
#include "conveyor/mask.h"

namespace conveyor {

class MaskField final : public Field {
 public:
  static constexpr std::string_view kName = "mask";

  // The mask's bytes as read: a PNG of class ids of the stored image's size; empty: no mask.
  std::vector<std::uint8_t> encoded;

  // The decoded mask, as Sample::image() / output() / publish() for pixels: empty until an op decodes it.
  ConstMaskView mask() const noexcept;
  MaskView mutable_mask() noexcept;
  // Where an op that produces a mask of `shape` writes it: the batch's mask slot when `shape` is its shape
  // (and the mask does not live there already), else the scratch mask not holding the current one.
  MaskView output(MaskShape shape);
  void publish();
  bool in_slot() const noexcept { return buffer_.in_slot(); }
  void bind_slot(MaskView slot) noexcept { buffer_.bind_slot(slot); }
  MaskView slot() const noexcept { return buffer_.slot(); }

  std::string_view name() const noexcept override { return kName; }
  bool empty() const noexcept override { return encoded.empty() && !buffer_.holds_contents(); }
  void clear() noexcept override;
  std::unique_ptr<Field> clone() const override;
  std::size_t open_with_image(int height, int width, std::size_t max_pixels) override;
  void move(const ops::GeometryChange& change, FieldMove& context) override;
  std::size_t batch_bytes(const FieldBatchLayout& layout) const override;
  std::unique_ptr<FieldBatch> make_batch(const FieldBatchLayout& layout,
                                         std::span<std::byte> fixed) const override;
  void tensors(std::vector<BatchTensor>& out) const override;

 private:
  // The current mask when there is one; throws InvalidArgument when it is still encoded (no decoding op has
  // opened it) or when its size is not the image's.
  ConstMaskView current(int image_height, int image_width) const;

  detail::PingPongBuffer<Mask, MaskView, ConstMaskView, MaskShape> buffer_;
  bool opened_ = false;  // open_with_image read `encoded`'s header into this thread's decoder
};

}  // namespace conveyor
