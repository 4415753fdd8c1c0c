#include "conveyor/sample.h"

#include <algorithm>
#include <string>

#include "conveyor/error.h"

namespace conveyor {

ConstImageView Sample::image() const noexcept { return pixels_.current(); }
ImageView Sample::mutable_image() noexcept { return pixels_.mutable_current(); }
ImageView Sample::output(ImageShape shape) { return pixels_.output(shape, "Sample::output"); }
void Sample::publish() { pixels_.publish("Sample::publish without a preceding output()"); }

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
  pixels_.drop_pending();
}

void Sample::recycle() noexcept {
  index = epoch = seed = 0;
  op_position = 0;
  label = -1;
  path.clear();
  encoded.clear();
  pixels_.clear();
  fields_.clear();
  defer_policy_ = nullptr;
  descriptor_size_ = 0;
  deferred_ = false;
}

}  // namespace conveyor
