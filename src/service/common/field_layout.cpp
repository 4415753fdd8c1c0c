#include "src/service/common/field_layout.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "conveyor/error.h"
#include "conveyor/field_kinds.h"
#include "conveyor/host_memory.h"
#include "src/core/host_allocation.h"

namespace conveyor::service::detail {
namespace {

std::optional<DType> dtype_named(const std::string& name) {
  for (DType type : {DType::uint8, DType::int64, DType::float32, DType::float16, DType::bfloat16, DType::uint16})
    if (name == to_string(type)) return type;
  return std::nullopt;
}

}  // namespace

std::vector<FieldTensorLayout> field_tensor_layouts(const Chain& chain) {
  if (!chain.batching.sample_shape || chain.batching.sample_shape->empty())
    throw InvalidArgument("a service chain needs BatchOptions::sample_shape");
  const FieldBatchLayout layout{.capacity = 1,
                                .image = *chain.batching.sample_shape,
                                .options = chain.batching,
                                .memory = pageable_host_memory()};
  std::vector<FieldTensorLayout> out;
  for (const std::shared_ptr<const Field>& kind : batch_field_kinds(chain.samples.fields(), chain.batching)) {
    // An empty batch of this kind says its tensors' names, types, fixed extents and padding.
    conveyor::detail::HostAllocation fixed(
        std::max(kind->batch_bytes(layout), conveyor::detail::HostAllocation::kAlignment), layout.memory);
    const std::unique_ptr<FieldBatch> batch = kind->make_batch(layout, {fixed.data(), fixed.size()});
    std::vector<BatchTensor> tensors;
    batch->finish(0, tensors);
    for (const BatchTensor& t : tensors) {
      FieldTensorLayout l{.field = std::string(t.field),
                          .name = std::string(t.name),
                          .dtype = t.view.dtype,
                          .padding_dim = t.padding.dim,
                          .padding_value = t.padding.value,
                          .counts = std::string(t.padding.counts),
                          .follows_geometry = t.follows_geometry};
      for (int d = 1; d < t.view.ndim; ++d) {
        const std::int64_t extent = t.view.shape[static_cast<std::size_t>(d)];
        // Padded to each batch's most unless the options fix the extent (an empty batch shows a fixed one).
        l.shape.push_back(d == t.padding.dim && extent == 0 ? -1 : extent);
      }
      out.push_back(std::move(l));
    }
  }
  return out;
}

void add_to_wire(const std::vector<FieldTensorLayout>& tensors, v1::ChainDescription& out) {
  for (const FieldTensorLayout& l : tensors) {
    v1::FieldTensor& t = *out.add_field_tensors();
    t.set_field(l.field);
    t.set_name(l.name);
    t.set_dtype(to_string(l.dtype));
    for (const std::int64_t extent : l.shape) t.add_shape(extent);
    t.set_padding_dim(l.padding_dim > 0 ? l.padding_dim : 0);
    t.set_padding_value(l.padding_value);
    t.set_counts(l.counts);
    t.set_follows_geometry(l.follows_geometry);
  }
}

std::vector<FieldTensorLayout> field_tensors_from_wire(const v1::ChainDescription& description) {
  std::vector<FieldTensorLayout> out;
  for (const v1::FieldTensor& t : description.field_tensors()) {
    const std::optional<DType> dtype = dtype_named(t.dtype());
    if (!dtype) throw InvalidArgument("job description: field tensor " + t.name() + " of type '" + t.dtype() + "'");
    if (t.shape_size() + 1 > TensorView::kMaxDims || t.padding_dim() < 0 || t.padding_dim() > t.shape_size())
      throw InvalidArgument("job description: field tensor " + t.name() + " of " +
                            std::to_string(t.shape_size() + 1) + " dimensions padded along " +
                            std::to_string(t.padding_dim()));
    FieldTensorLayout l{.field = t.field(),
                        .name = t.name(),
                        .dtype = *dtype,
                        .shape = {t.shape().begin(), t.shape().end()},
                        .padding_dim = t.padding_dim() > 0 ? t.padding_dim() : -1,
                        .padding_value = t.padding_value(),
                        .counts = t.counts(),
                        .follows_geometry = t.follows_geometry()};
    out.push_back(std::move(l));
  }
  return out;
}

std::string describe_field_tensors(const std::vector<FieldTensorLayout>& tensors) {
  if (tensors.empty()) return "none";
  std::string text;
  for (const FieldTensorLayout& l : tensors) {
    if (!text.empty()) text += "; ";
    text += l.name + " " + to_string(l.dtype) + " (N";
    for (const std::int64_t extent : l.shape) text += ", " + (extent < 0 ? std::string("*") : std::to_string(extent));
    text += ")";
  }
  return text;
}

}  // namespace conveyor::service::detail
