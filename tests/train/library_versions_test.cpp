#include "conveyor/train/library_versions.h"

#include <gtest/gtest.h>

namespace conveyor::train {
namespace {

TEST(TrainLibraryVersions, AddCudnnAndCublasToTheDeviceReport) {
  const LibraryVersions v = library_versions();
  EXPECT_TRUE(v.libjpeg_turbo.loaded.known());
#ifdef CONVEYOR_HAVE_CUDA
  EXPECT_TRUE(v.cuda_runtime.loaded.known());
  EXPECT_EQ(v.cudnn.name, "cuDNN");
  EXPECT_TRUE(v.cudnn.compiled.known());
  EXPECT_TRUE(v.cudnn.loaded.known());
  EXPECT_TRUE(v.cudnn_cuda.known());
  EXPECT_EQ(v.cublas.name, "cuBLAS");
  EXPECT_TRUE(v.cublas.loaded.known());
  EXPECT_EQ(v.cublas.loaded.major, v.cublas.compiled.major);
  EXPECT_EQ(v.libraries().size(), 7u);
#else
  EXPECT_TRUE(v.cudnn.name.empty());
  EXPECT_EQ(v.libraries().size(), 3u);
#endif
}

}  // namespace
}  // namespace conveyor::train
