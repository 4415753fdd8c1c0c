// Loading nvJPEG at run time: a missing library or one without the functions is reported in one line and
// nothing else happens; where nvJPEG is installed (the GPU machine) it loads and says which file and version.
#include "src/device/nvjpeg/nvjpeg_library.h"

#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "conveyor/error.h"

namespace conveyor::nvjpeg {
namespace {

TEST(NvjpegLibrary, AMissingLibraryIsReportedWithEveryNameTried) {
  const std::string names[] = {"libconveyor-no-such-nvjpeg.so.99", "libconveyor-no-such-nvjpeg.so"};
  const LoadResult result = load(names);
  EXPECT_FALSE(result);
  EXPECT_EQ(result.unavailable.rfind("nvJPEG unavailable: ", 0), 0u) << result.unavailable;
  EXPECT_NE(result.unavailable.find(names[0]), std::string::npos) << result.unavailable;
  EXPECT_NE(result.unavailable.find(names[1]), std::string::npos) << result.unavailable;
}

TEST(NvjpegLibrary, ALibraryWithoutTheFunctionsIsRefused) {
  const std::string names[] = {"libm.so.6"};
  const LoadResult result = load(names);
  EXPECT_FALSE(result);
  EXPECT_NE(result.unavailable.find("libm.so.6: has no function nvjpegGetProperty"), std::string::npos)
      << result.unavailable;
}

TEST(NvjpegLibrary, FailuresNameTheCallTheContextAndTheStatus) {
  EXPECT_STREQ(to_string(Status::bad_jpeg), "NVJPEG_STATUS_BAD_JPEG");
  EXPECT_STREQ(to_string(Status::arch_mismatch), "NVJPEG_STATUS_ARCH_MISMATCH");
  EXPECT_NO_THROW(check(Status::success, "nvjpegDestroy", "test"));
  try {
    check(Status::jpeg_not_supported, "nvjpegDecodeJpegHost", "decoding image 3");
    FAIL() << "check did not throw";
  } catch (const DeviceError& error) {
    EXPECT_STREQ(error.what(),
                 "nvjpegDecodeJpegHost failed in decoding image 3: NVJPEG_STATUS_JPEG_NOT_SUPPORTED (4)");
  }
}

// On machines with nvJPEG (CUDA's libnvjpeg.so.13 on the library path); skipped elsewhere, saying why.
TEST(NvjpegLibrary, TheInstalledLibraryLoadsWithEveryFunction) {
  const LoadResult result = load();
  if (!result) GTEST_SKIP() << result.unavailable;
  const Library& library = *result.library;
  std::cout << "[ nvjpeg  ] " << library.version() << " from " << library.path() << "\n";
  EXPECT_FALSE(library.path().empty());
  EXPECT_NE(library.version(), "unknown");
  EXPECT_GE(std::stoi(library.version()), 11);  // nvjpegDecodeBatchedEx, the ROI API: 11.x and later
  EXPECT_NE(library.api().decode_batched_ex, nullptr);
  EXPECT_NE(library.api().decode_jpeg_device, nullptr);
}

}  // namespace
}  // namespace conveyor::nvjpeg
