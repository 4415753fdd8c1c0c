#include "conveyor/fields/mask_field.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "conveyor/error.h"
#include "conveyor/fields.h"
#include "conveyor/ops/decode_png.h"
#include "conveyor/ops/field_geometry.h"
#include "conveyor/ops/flip.h"

namespace conveyor {
namespace {

// One decoder and one whole-mask buffer per thread, as for JPEGs (sample_ops.cpp): buffers kept from one
// sample to the next; the decoder holds a mask's header only between open_with_image and the move after it,
// within one op on one thread.
ops::PngDecoder& thread_mask_decoder() {
  thread_local ops::PngDecoder decoder;
  return decoder;
}

Mask& thread_whole_mask() {
  thread_local Mask mask;
  return mask;
}

std::string size_text(int height, int width) { return std::to_string(width) + "x" + std::to_string(height); }

std::string describe(MaskShape shape) {
  return std::to_string(shape.height) + "x" + std::to_string(shape.width) + " " + to_string(shape.type);
}

DType dtype_of(MaskType type) noexcept { return type == MaskType::uint16 ? DType::uint16 : DType::uint8; }

void copy_mask(ConstMaskView from, MaskView to) noexcept {
  const std::size_t row = static_cast<std::size_t>(from.width) * from.element_size();
  for (int y = 0; y < from.height; ++y) std::memcpy(to.row(y), from.row(y), row);
}

// The masks of one batch buffer: (capacity, H, W) class ids in the buffer's own block, written in place by
// the last op that produces the batch's mask shape, or copied in by the batch stage.
class MaskBatch final : public FieldBatch {
 public:
  MaskBatch(std::uint8_t* masks, MaskShape shape, bool pinned)
      : masks_(masks), shape_(shape), pinned_(pinned) {}

  std::string_view name() const noexcept override { return MaskField::kName; }

  void bind(Field& field, std::size_t slot) noexcept override {
    static_cast<MaskField&>(field).bind_slot(view(slot));
  }

  void take(Field* field, std::size_t slot) override {
    const auto* mask_field = static_cast<const MaskField*>(field);
    const ConstMaskView mask = mask_field ? mask_field->mask() : ConstMaskView{};
    if (mask.empty())
      throw InvalidArgument(mask_field == nullptr || mask_field->encoded.empty()
                                ? "no mask: the batch's samples have masks and this one has none"
                                : "no mask after the maps: decode it with the image (ops::decode, "
                                  "decode_random_resized_crop or decode_center_crop)");
    if (mask.shape() != shape_)
      throw ShapeMismatch("mask is " + describe(mask.shape()) + " but the batch's masks are " +
                          describe(shape_));
    if (!mask_field->in_slot()) copy_mask(mask, view(slot));
  }

  void move_to(std::size_t from, FieldBatch& target, std::size_t to) noexcept override {
    std::memcpy(static_cast<MaskBatch&>(target).view(to).data, view(from).data, shape_.bytes());
  }

  void copy_out(std::size_t slot, Field& field) const override {
    auto& mask_field = static_cast<MaskField&>(field);
    copy_mask(const_cast<MaskBatch&>(*this).view(slot), mask_field.output(shape_));
    mask_field.publish();
  }

  void copy_in(const Field* field, std::size_t slot) override {
    const ConstMaskView mask = field ? static_cast<const MaskField*>(field)->mask() : ConstMaskView{};
    if (mask.empty() || mask.shape() != shape_) {
      std::memset(view(slot).data, 0, shape_.bytes());  // before any sample was kept: background
      return;
    }
    copy_mask(mask, view(slot));
  }

  void finish(std::size_t size, std::vector<BatchTensor>& out) override {
    out.push_back({.field = MaskField::kName,
                   .name = "masks",
                   .view = TensorView::contiguous(
                       masks_, dtype_of(shape_.type),
                       {static_cast<std::int64_t>(size), shape_.height, shape_.width}, -1, pinned_),
                   .follows_geometry = true});
  }

 private:
  MaskView view(std::size_t slot) noexcept { return MaskView(masks_ + slot * shape_.bytes(), shape_); }

  std::uint8_t* masks_;
  MaskShape shape_;
  bool pinned_;
};

// The batch's mask shape: the image's height and width, in the type of the mask this field holds (the first
// sample's), else the one batch() was given.
MaskShape batch_mask_shape(const MaskField& field, const FieldBatchLayout& layout) {
  const ConstMaskView mask = field.mask();
  return {layout.image.height, layout.image.width, mask.empty() ? layout.options.mask_type : mask.type};
}

}  // namespace

ConstMaskView MaskField::mask() const noexcept { return buffer_.current(); }
MaskView MaskField::mutable_mask() noexcept { return buffer_.mutable_current(); }
MaskView MaskField::output(MaskShape shape) { return buffer_.output(shape, "Sample::mask_output"); }
void MaskField::publish() { buffer_.publish("Sample::publish_mask without a preceding mask_output()"); }

void MaskField::clear() noexcept {
  encoded.clear();
  buffer_.clear();
  opened_ = false;
}

std::unique_ptr<Field> MaskField::clone() const { return std::make_unique<MaskField>(*this); }

ConstMaskView MaskField::current(int image_height, int image_width) const {
  const ConstMaskView view = mask();
  if (view.empty())
    throw InvalidArgument(
        "the sample's mask was not decoded: decode it with the image (ops::decode, "
        "decode_random_resized_crop or decode_center_crop decode both)");
  if (view.height != image_height || view.width != image_width)
    throw InvalidArgument("the mask is " + size_text(view.height, view.width) + " but the image " +
                          size_text(image_height, image_width));
  return view;
}

std::size_t MaskField::open_with_image(int height, int width, std::size_t max_pixels) {
  opened_ = false;
  if (encoded.empty()) return 0;
  ops::PngDecoder& decoder = thread_mask_decoder();
  decoder.open(encoded, max_pixels);
  const MaskShape shape = decoder.mask_shape();
  if (shape.height != height || shape.width != width)
    throw InvalidArgument("the mask is " + size_text(shape.height, shape.width) + " but the image " +
                          size_text(height, width));
  opened_ = true;
  return decoder.memory_estimate();
}

void MaskField::move(const ops::GeometryChange& change, FieldMove& context) {
  using Kind = ops::GeometryChange::Kind;
  if (opened_) {
    // A decoding op opened the PNG with the image (and decoded the image anew): decode the part it keeps.
    opened_ = false;
    ops::PngDecoder& decoder = thread_mask_decoder();
    const MaskShape whole = decoder.mask_shape();
    const bool all = change.kind == Kind::mirror ||
                     (change.window == ops::Rect{0, 0, whole.width, whole.height} && !change.resizes());
    if (all) {
      decoder.read_mask(output(whole));
      publish();
      if (change.kind == Kind::mirror)
        change.horizontal ? ops::flip_mask_horizontal(mutable_mask())
                          : ops::flip_mask_vertical(mutable_mask());
      return;
    }
    Mask& buffer = thread_whole_mask();
    buffer.reshape(whole);
    decoder.read_mask(buffer.view());
    ops::crop_resize_mask(std::as_const(buffer).view(), change.window,
                          output({change.out_height, change.out_width, whole.type}), change.pad,
                          context.options.mask_fill);
    publish();
    return;
  }
  if (change.identity()) return;
  const ConstMaskView mask = current(change.image_height, change.image_width);
  if (change.kind == Kind::mirror) {
    change.horizontal ? ops::flip_mask_horizontal(mutable_mask()) : ops::flip_mask_vertical(mutable_mask());
    return;
  }
  ops::crop_resize_mask(mask, change.window, output({change.out_height, change.out_width, mask.type}),
                        change.pad, context.options.mask_fill);
  publish();
}

std::size_t MaskField::batch_bytes(const FieldBatchLayout& layout) const {
  return layout.capacity * batch_mask_shape(*this, layout).bytes();
}

std::unique_ptr<FieldBatch> MaskField::make_batch(const FieldBatchLayout& layout,
                                                  std::span<std::byte> fixed) const {
  return std::make_unique<MaskBatch>(reinterpret_cast<std::uint8_t*>(fixed.data()),
                                     batch_mask_shape(*this, layout),
                                     layout.memory && layout.memory->page_locked());
}

void MaskField::tensors(std::vector<BatchTensor>& out) const {
  const ConstMaskView view = mask();
  if (view.empty()) return;
  TensorView tensor = TensorView::contiguous(const_cast<std::uint8_t*>(view.data), dtype_of(view.type),
                                             {view.height, view.width});
  tensor.strides[0] = view.stride / static_cast<std::ptrdiff_t>(view.element_size());
  out.push_back({.field = kName, .name = "mask", .view = tensor, .follows_geometry = true});
}

}  // namespace conveyor
