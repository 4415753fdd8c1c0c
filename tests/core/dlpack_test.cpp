// Host batches as DLPack tensors: what a consumer library reads (shape, strides, type, device, data) and
// that the tensor keeps the batch's memory alive until the consumer deletes it.
#include "conveyor/dlpack.h"

#include <gtest/gtest.h>

#include <memory>

#include "conveyor/batch.h"
#include "conveyor/error.h"

namespace conveyor {
namespace {

constexpr ImageShape kShape{3, 4, 3};

TEST(Dlpack, PixelsAreNhwcUint8OnTheCpu) {
  PageableBatchBuffer buffer(5, kShape);
  const Batch batch = buffer.batch(4);
  DLManagedTensor* tensor = to_dlpack_pixels(batch);
  const DLTensor& t = tensor->dl_tensor;
  EXPECT_EQ(t.data, batch.pixels().data());
  EXPECT_EQ(t.device.device_type, kDLCPU);
  EXPECT_EQ(t.ndim, 4);
  EXPECT_EQ(t.shape[0], 4);
  EXPECT_EQ(t.shape[1], 3);
  EXPECT_EQ(t.shape[2], 4);
  EXPECT_EQ(t.shape[3], 3);
  EXPECT_EQ(t.strides[0], 36);
  EXPECT_EQ(t.strides[1], 12);
  EXPECT_EQ(t.strides[2], 3);
  EXPECT_EQ(t.strides[3], 1);
  EXPECT_EQ(t.dtype.code, kDLUInt);
  EXPECT_EQ(t.dtype.bits, 8);
  EXPECT_EQ(t.dtype.lanes, 1);
  EXPECT_EQ(t.byte_offset, 0u);
  tensor->deleter(tensor);
}

TEST(Dlpack, LabelsAreInt64) {
  PageableBatchBuffer buffer(5, kShape);
  const Batch batch = buffer.batch(5);
  DLManagedTensor* tensor = to_dlpack_labels(batch);
  EXPECT_EQ(tensor->dl_tensor.data, batch.labels().data());
  EXPECT_EQ(tensor->dl_tensor.ndim, 1);
  EXPECT_EQ(tensor->dl_tensor.shape[0], 5);
  EXPECT_EQ(tensor->dl_tensor.strides[0], 1);
  EXPECT_EQ(tensor->dl_tensor.dtype.code, kDLInt);
  EXPECT_EQ(tensor->dl_tensor.dtype.bits, 64);
  tensor->deleter(tensor);
}

TEST(Dlpack, TheTensorKeepsTheBatchMemoryAliveUntilItsDeleterRuns) {
  DLManagedTensor* tensor = nullptr;
  std::weak_ptr<const void> memory;
  {
    PageableBatchBuffer buffer(2, kShape);
    buffer.slot(1).data[0] = 77;
    Batch batch = buffer.batch(2);
    memory = batch.share_memory();
    tensor = to_dlpack_pixels(batch);
  }  // the buffer object and the batch are gone; the tensor still holds the memory
  ASSERT_FALSE(memory.expired());
  EXPECT_EQ(static_cast<const std::uint8_t*>(tensor->dl_tensor.data)[kShape.bytes()], 77);
  tensor->deleter(tensor);
  EXPECT_TRUE(memory.expired());
}

TEST(Dlpack, BfloatAndFloatTypesMapToTheirCodes) {
  float data[4] = {};
  for (const auto& [type, code, bits] : {std::tuple{DType::float32, kDLFloat, 32},
                                         {DType::float16, kDLFloat, 16},
                                         {DType::bfloat16, kDLBfloat, 16}}) {
    DLManagedTensor* tensor = to_dlpack(TensorView::contiguous(data, type, {2, 2}), nullptr);
    EXPECT_EQ(tensor->dl_tensor.dtype.code, code);
    EXPECT_EQ(tensor->dl_tensor.dtype.bits, bits);
    tensor->deleter(tensor);
  }
}

TEST(Dlpack, AnEmptyTensorIsRefused) {
  EXPECT_THROW(to_dlpack(TensorView{}, nullptr), InvalidArgument);
  EXPECT_THROW(to_dlpack_pixels(Batch()), InvalidArgument);
}

}  // namespace
}  // namespace conveyor
