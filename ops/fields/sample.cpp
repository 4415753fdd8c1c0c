#include "conveyor/sample.h"

#include <algorithm>
#include <string>

#include "conveyor/error.h"

namespace conveyor {

ConstImageView Sample::image() const noexcept {
  if (current_ == kSlot) return slot_;
  if (current_ == kNone) return {};
  return scratch_[current_].view();
}

ImageView Sample::mutable_image() noexcept {
  if (current_ == kSlot) return slot_;
  if (current_ == kNone) return {};
  return scratch_[current_].view();
}

ImageView Sample::output(ImageShape shape) {
  if (shape.empty()) throw InvalidArgument("Sample::output: empty shape");
  if (!slot_.empty() && current_ != kSlot && shape == slot_.shape()) {
    pending_ = kSlot;
    return slot_;
  }
  // Ping-pong between the two scratch images so that an op can read the current one while writing.
  pending_ = current_ == 0 ? 1 : 0;
  scratch_[pending_].reshape(shape);
  return scratch_[pending_].view();
}

void Sample::publish() {
  if (pending_ == kNone) throw InvalidArgument("Sample::publish without a preceding output()");
  current_ = pending_;
  pending_ = kNone;
}

const FieldOptions& Sample::field_options() const noexcept {
  static const FieldOptions defaults;
  return field_options_ ? *field_options_ : defaults;
}

void Sample::defer(std::span<const std::byte> descriptor) {
  if (defer_policy_ == nullptr)
    throw InvalidArgument(
        "Sample::defer: the pipeline did not offer deferral to this op (only the last map "
        "of a batched chain whose PipelineOptions::defer is set may defer)");
  if (descriptor.size() > descriptor_.size())
    throw InvalidArgument("Sample::defer: a descriptor of " + std::to_string(descriptor.size()) +
                          " bytes; at most " + std::to_string(descriptor_.size()));
  std::copy(descriptor.begin(), descriptor.end(), descriptor_.begin());
  descriptor_size_ = descriptor.size();
  deferred_ = true;
  pending_ = kNone;
}

void Sample::recycle() noexcept {
  index = epoch = seed = 0;
  op_position = 0;
  label = -1;
  path.clear();
  encoded.clear();
  scratch_[0].clear();
  scratch_[1].clear();
  slot_ = {};
  current_ = pending_ = kNone;
  fields_.clear();
  defer_policy_ = nullptr;
  descriptor_size_ = 0;
  deferred_ = false;
}

}  // namespace conveyor
