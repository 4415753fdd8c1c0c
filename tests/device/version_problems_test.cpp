#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "conveyor/cuda/device.h"

namespace conveyor {
namespace {

// A machine where everything fits: CUDA 13.0 everywhere, one GPU.
LibraryVersions healthy() {
  LibraryVersions v;
  v.built_with_cuda = true;
  v.cuda_driver = {"CUDA driver", {}, {13, 0, 0}, "/usr/lib/libcuda.so.1", ""};
  v.cuda_runtime = {"CUDA runtime", {13, 0, 0}, {13, 0, 0}, "libcudart.so.13", ""};
  v.cudnn = {"cuDNN", {9, 19, 0}, {9, 19, 0}, "libcudnn.so.9", ""};
  v.cudnn_cuda = {13, 1, 0};
  v.cublas = {"cuBLAS", {13, 1, 0}, {13, 1, 0}, "libcublas.so.13", ""};
  v.libjpeg_turbo = {"libjpeg-turbo", {2, 1, 5}, {2, 1, 5}, "libturbojpeg.so.0", ""};
  v.tbb = {"oneTBB", {2021, 8, 0}, {2021, 8, 0}, "libtbb.so.12", ""};
  v.opencv = {"OpenCV", {4, 6, 0}, {4, 6, 0}, "libopencv_core.so.406", ""};
  v.nvidia_kernel_module = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.00";
  v.visible_gpus = 1;
  return v;
}

std::string all(const std::vector<std::string>& problems) {
  std::string text;
  for (const auto& p : problems) text += p + "\n";
  return text;
}

// Exactly one problem, containing every fragment.
void expect_one_problem(const LibraryVersions& versions, std::initializer_list<const char*> fragments) {
  const auto problems = version_problems(versions);
  ASSERT_EQ(problems.size(), 1u) << all(problems);
  for (const char* fragment : fragments)
    EXPECT_NE(problems[0].find(fragment), std::string::npos) << problems[0];
}

TEST(VersionProblems, NoneWhenEverythingFits) { EXPECT_EQ(all(version_problems(healthy())), ""); }

TEST(VersionProblems, SaysWhenTheBuildHasNoCuda) {
  LibraryVersions v = healthy();
  v.built_with_cuda = false;
  expect_one_problem(v, {"no GPU support"});
}

TEST(VersionProblems, SaysWhenThereIsNoDriver) {
  LibraryVersions v = healthy();
  v.cuda_driver.loaded = {};
  v.nvidia_kernel_module.clear();
  v.visible_gpus = 0;
  v.gpu_error = "cudaErrorInsufficientDriver: ...";
  expect_one_problem(v, {"no NVIDIA driver", "--device cpu"});
}

TEST(VersionProblems, SaysWhenTheKernelModuleHasNoUserSpaceLibrary) {
  LibraryVersions v = healthy();
  v.cuda_driver.loaded = {};
  v.visible_gpus = 0;
  expect_one_problem(v, {"kernel module is loaded", "libcuda.so.1"});
}

TEST(VersionProblems, SaysWhenTheDriverIsOlderThanTheRuntime) {
  LibraryVersions v = healthy();
  v.cuda_driver.loaded = {12, 4, 0};
  expect_one_problem(v, {"supports CUDA up to 12.4", "13.0", "update the driver"});
}

TEST(VersionProblems, WarnsWhenTheDriverOnlyLagsByAMinorVersion) {
  LibraryVersions v = healthy();
  v.cuda_runtime.loaded = v.cuda_runtime.compiled = {13, 1, 0};
  expect_one_problem(v, {"minor-version compatibility"});
}

TEST(VersionProblems, SaysWhenTheLoadedRuntimeIsOlderThanTheBuild) {
  LibraryVersions v = healthy();
  v.cuda_runtime.compiled = {13, 1, 0};
  expect_one_problem(v, {"CUDA runtime 13.0.0", "older than the 13.1.0"});
}

TEST(VersionProblems, SaysWhenCudnnIsAnotherMajorVersion) {
  LibraryVersions v = healthy();
  v.cudnn.loaded = {8, 9, 7};
  expect_one_problem(v, {"cuDNN 8.9.7", "built against 9.19.0", "another major version", "libcudnn.so.9"});
}

TEST(VersionProblems, SaysWhenCudnnIsMissing) {
  LibraryVersions v = healthy();
  v.cudnn.loaded = {};
  expect_one_problem(v, {"cuDNN could not be loaded"});
}

TEST(VersionProblems, SaysWhenCudnnWasBuiltForAnotherCuda) {
  LibraryVersions v = healthy();
  v.cudnn_cuda = {12, 8, 0};
  expect_one_problem(v, {"built for CUDA 12.8", "runtime is 13.0"});
}

TEST(VersionProblems, SaysWhenCublasBelongsToAnotherCuda) {
  LibraryVersions v = healthy();
  v.cublas.loaded = v.cublas.compiled = {12, 9, 0};
  expect_one_problem(v, {"cuBLAS 12.9.0", "CUDA 12"});
}

TEST(VersionProblems, SaysWhenNoGpuIsVisible) {
  LibraryVersions v = healthy();
  v.visible_gpus = 0;
  v.gpu_error = "cudaErrorNoDevice: no CUDA-capable device is detected";
  expect_one_problem(v, {"no CUDA device is visible", "cudaErrorNoDevice"});
}

TEST(VersionProblems, BlamesCudaVisibleDevicesWhenItHidesEveryGpu) {
  LibraryVersions v = healthy();
  v.visible_gpus = 0;
  v.cuda_visible_devices = "";
  v.gpu_error = "cudaErrorNoDevice: no CUDA-capable device is detected";
  expect_one_problem(v, {"CUDA_VISIBLE_DEVICES=''", "hides every GPU"});
}

TEST(VersionProblems, SaysWhenOpenCvIsAnotherMinorVersion) {
  LibraryVersions v = healthy();
  v.opencv.loaded = {4, 7, 0};
  expect_one_problem(v, {"OpenCV 4.7.0", "another minor version"});
}

TEST(VersionProblems, SaysWhenTbbIsOlderThanTheBuild) {
  LibraryVersions v = healthy();
  v.tbb.loaded = {2021, 5, 0};
  expect_one_problem(v, {"oneTBB 2021.5.0", "older than the 2021.8.0"});
}

TEST(VersionProblems, SaysWhenTheLoadedLibjpegTurboCannotBeTold) {
  LibraryVersions v = healthy();
  v.libjpeg_turbo.loaded = {};
  expect_one_problem(v, {"could not tell which libjpeg-turbo"});
}

TEST(LibraryVersionsOnThisMachine, ReportTheLibrariesActuallyLoaded) {
  const LibraryVersions v = library_versions();
  for (const LibraryVersion& library : {v.libjpeg_turbo, v.tbb, v.opencv}) {
    EXPECT_TRUE(library.compiled.known()) << library.name;
    EXPECT_TRUE(library.loaded.known()) << library.name;
    EXPECT_EQ(library.loaded.major, library.compiled.major) << library.name;
  }
  // The TurboJPEG code conveyor calls lives in a file we can name (a shared library or the program).
  EXPECT_FALSE(v.libjpeg_turbo.path.empty());
#ifdef CONVEYOR_HAVE_CUDA
  EXPECT_TRUE(v.built_with_cuda);
  EXPECT_TRUE(v.cuda_runtime.compiled.known());
  EXPECT_TRUE(v.cuda_runtime.loaded.known());
  // cuDNN and cuBLAS belong to the training wing's report (tests/train/library_versions_test.cpp).
  EXPECT_TRUE(v.cudnn.name.empty());
  EXPECT_TRUE(v.cublas.name.empty());
  EXPECT_EQ(v.libraries().size(), 5u);
  EXPECT_EQ(v.visible_gpus == 0, !v.gpu_error.empty());
#else
  EXPECT_FALSE(v.built_with_cuda);
  EXPECT_EQ(v.libraries().size(), 3u);
#endif
}

}  // namespace
}  // namespace conveyor
