#include "conveyor/dlpack.h"

#include <utility>

#include "conveyor/error.h"

namespace conveyor {
namespace {

// What a managed tensor owns: the shape and strides its DLTensor points at, and the memory's owner.
struct DlpackContext {
  DLManagedTensor managed{};
  std::int64_t shape[TensorView::kMaxDims] = {};
  std::int64_t strides[TensorView::kMaxDims] = {};
  std::shared_ptr<const void> owner;
};

DLDataType dlpack_type(DType type) {
  switch (type) {
    case DType::uint8:
      return {kDLUInt, 8, 1};
    case DType::int64:
      return {kDLInt, 64, 1};
    case DType::float32:
      return {kDLFloat, 32, 1};
    case DType::float16:
      return {kDLFloat, 16, 1};
    case DType::bfloat16:
      return {kDLBfloat, 16, 1};
    case DType::uint16:
      return {kDLUInt, 16, 1};
  }
  throw InvalidArgument("to_dlpack: unknown element type");
}

}  // namespace

DLManagedTensor* to_dlpack(const TensorView& view, std::shared_ptr<const void> owner) {
  if (!view || view.ndim <= 0 || view.ndim > TensorView::kMaxDims)
    throw InvalidArgument("to_dlpack: an empty tensor (no data, or no dimensions) cannot be exported");
  auto context = std::make_unique<DlpackContext>();
  for (int d = 0; d < view.ndim; ++d) {
    context->shape[d] = view.shape[static_cast<std::size_t>(d)];
    context->strides[d] = view.strides[static_cast<std::size_t>(d)];
  }
  context->owner = std::move(owner);
  DLTensor& tensor = context->managed.dl_tensor;
  tensor.data = view.data;
  tensor.device = view.on_device() ? DLDevice{kDLCUDA, view.device} : DLDevice{kDLCPU, 0};
  tensor.ndim = view.ndim;
  tensor.dtype = dlpack_type(view.dtype);
  tensor.shape = context->shape;
  tensor.strides = context->strides;
  tensor.byte_offset = 0;
  context->managed.manager_ctx = context.get();
  // The consumer calls this exactly once, on whatever thread frees its tensor: dropping the owner may give
  // a buffer back to its pool, which is thread-safe.
  context->managed.deleter = [](DLManagedTensor* self) {
    delete static_cast<DlpackContext*>(self->manager_ctx);  // NOLINT(cppcoreguidelines-owning-memory)
  };
  return &context.release()->managed;
}

DLManagedTensor* to_dlpack_pixels(const Batch& batch) {
  return to_dlpack(batch.pixel_tensor(), batch.share_memory());
}

DLManagedTensor* to_dlpack_labels(const Batch& batch) {
  return to_dlpack(batch.label_tensor(), batch.share_memory());
}

}  // namespace conveyor
