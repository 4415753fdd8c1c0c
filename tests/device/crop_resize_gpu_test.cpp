// The GPU crop + resize against ops::resize (OpenCV INTER_LINEAR) of the same window, bit for bit, into
// pitched slots of a batch; the bytes around each slot stay untouched. Skips without a GPU. A mismatch prints
// the job, how many values differ and the first one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/crop.h"
#include "conveyor/ops/resize.h"
#include "conveyor/random.h"
#include "gpu_stage_support.h"
#include "src/device/image/crop_resize.h"
#include "support/test_images.h"

namespace conveyor::cuda {
namespace {

constexpr std::uint8_t kUntouched = 0x5A;

class CropResizeGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    CONVEYOR_SKIP_WITHOUT_GPU();
    guard_.emplace(0);
    pool_.emplace(0);
    stream_.emplace();
  }

  // Runs `windows` (one source image each) into slots of out_shape with the given pitches, and compares each
  // slot with ops::resize on the CPU, and the padding with kUntouched.
  void check(const std::vector<Image>& sources, const std::vector<ops::Rect>& windows, ImageShape out_shape,
             std::size_t row_pitch, std::size_t image_stride, int blocks_per_image = 0) {
    const std::size_t count = windows.size();
    std::vector<DeviceBuffer> device_sources;
    std::vector<CropResizeJob> jobs(count);
    for (std::size_t i = 0; i < count; ++i) {
      const Image& source = sources[i];
      device_sources.push_back(testing::upload(
          *pool_, std::vector<std::uint8_t>(source.data(), source.data() + source.shape().bytes()),
          stream_->get()));
      jobs[i].source = device_sources.back().as<std::uint8_t>();
      jobs[i].source_pitch = static_cast<std::size_t>(source.width()) * source.channels();
      jobs[i].x = windows[i].x;
      jobs[i].y = windows[i].y;
      jobs[i].width = windows[i].width;
      jobs[i].height = windows[i].height;
      jobs[i].slot = static_cast<std::uint32_t>(count - 1 - i);  // slots in another order than the jobs
    }
    std::vector<std::uint8_t> job_bytes(count * sizeof(CropResizeJob));
    std::memcpy(job_bytes.data(), jobs.data(), job_bytes.size());
    const DeviceBuffer device_jobs = testing::upload(*pool_, job_bytes, stream_->get());
    DeviceBuffer out =
        testing::upload(*pool_, std::vector<std::uint8_t>(count * image_stride, kUntouched), stream_->get());
    crop_resize_linear(device_jobs.as<CropResizeJob>(), count,
                       {out.as<std::uint8_t>(), count, out_shape, image_stride, row_pitch}, stream_->get(),
                       blocks_per_image);
    const auto got = testing::download(out.data(), count * image_stride, stream_->get());
    for (std::size_t i = 0; i < count; ++i) {
      Image expected(out_shape);
      ops::resize(ops::crop(sources[i].view(), windows[i]), expected.view(), ops::Interpolation::linear);
      const std::uint8_t* slot = got.data() + jobs[i].slot * image_stride;
      const ConstImageView result(slot, out_shape, static_cast<std::ptrdiff_t>(row_pitch));
      int differing = 0;
      std::string first;
      for (int y = 0; y < out_shape.height; ++y)
        for (int x = 0; x < out_shape.width * out_shape.channels; ++x)
          if (result.row(y)[x] != expected.view().row(y)[x] && differing++ == 0)
            first = "(x " + std::to_string(x / out_shape.channels) + ", y " + std::to_string(y) +
                    ", channel " + std::to_string(x % out_shape.channels) + "): GPU " +
                    std::to_string(result.row(y)[x]) + ", CPU " + std::to_string(expected.view().row(y)[x]);
      EXPECT_EQ(differing, 0) << "job " << i << ": window " << windows[i].width << "x" << windows[i].height
                              << "+" << windows[i].x << "+" << windows[i].y << " of " << sources[i].width()
                              << "x" << sources[i].height() << " -> " << out_shape.width << "x"
                              << out_shape.height << ": " << differing << " values differ, first at "
                              << first;
      int touched = 0;
      for (std::size_t b = 0; b < image_stride; ++b) {
        const std::size_t y = b / row_pitch, x = b % row_pitch;
        const bool inside = y < static_cast<std::size_t>(out_shape.height) &&
                            x < static_cast<std::size_t>(out_shape.width) * out_shape.channels;
        touched += !inside && slot[b] != kUntouched;
      }
      EXPECT_EQ(touched, 0) << "job " << i << " wrote " << touched << " bytes outside its image";
    }
  }

  std::optional<DeviceGuard> guard_;
  std::optional<DeviceMemoryPool> pool_;
  std::optional<Stream> stream_;
};

TEST_F(CropResizeGpu, FewerBlocksPerImageGiveTheSameBytes) {
  // FeederOptions::kernel_blocks_per_image: the kernel loops over the pixels with whatever blocks it has.
  std::vector<Image> sources;
  std::vector<ops::Rect> windows;
  for (int i = 0; i < 6; ++i) {
    sources.push_back(testing::make_picture(150, 200, 3, 40 + static_cast<std::uint64_t>(i)));
    windows.push_back({3 * i, 2 * i, 120 + i, 90 - i});
  }
  const ImageShape out{64, 64, 3};
  for (const int blocks : {1, 3, 1000}) check(sources, windows, out, 64 * 3, 64 * 64 * 3, blocks);
}

TEST_F(CropResizeGpu, RandomWindowsEqualOpenCvBitForBit) {
  Rng rng(31);
  for (const int channels : {3, 1}) {
    std::vector<Image> sources;
    std::vector<ops::Rect> windows;
    for (int i = 0; i < 40; ++i) {
      const int h = 1 + static_cast<int>(rng.below(400)), w = 1 + static_cast<int>(rng.below(500));
      sources.push_back(testing::make_picture(h, w, channels, 100 + static_cast<std::uint64_t>(i)));
      const int ww = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(w)));
      const int wh = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(h)));
      const auto room_x = static_cast<std::uint64_t>(w - ww) + 1,
                 room_y = static_cast<std::uint64_t>(h - wh) + 1;
      windows.push_back({static_cast<int>(rng.below(room_x)), static_cast<int>(rng.below(room_y)), ww, wh});
    }
    const ImageShape out{57, 83, channels};
    check(sources, windows, out, 83 * channels + 13, (83 * channels + 13) * 57 + 100);
  }
}

TEST_F(CropResizeGpu, OutputsWiderThanABlockAndShorterThanATileEqualOpenCv) {
  // A block has a thread per column up to 256 columns and makes 8 rows at a time: wider outputs loop over
  // the columns, and the last tile of rows is short.
  std::vector<Image> sources;
  std::vector<ops::Rect> windows;
  for (int i = 0; i < 4; ++i) {
    sources.push_back(testing::make_picture(90, 420, 3, 60 + static_cast<std::uint64_t>(i)));
    windows.push_back({7 * i, i, 400 - 11 * i, 85 - 3 * i});
  }
  const ImageShape out{13, 300, 3};
  for (const int blocks : {0, 1}) check(sources, windows, out, 300 * 3, 300 * 3 * 13, blocks);
}

TEST_F(CropResizeGpu, TrainingBatchEqualsOpenCvBitForBit) {
  Rng rng(32);
  std::vector<Image> sources;
  std::vector<ops::Rect> windows;
  for (int i = 0; i < 64; ++i) {
    sources.push_back(testing::make_picture(375, 500, 3, 200 + static_cast<std::uint64_t>(i)));
    const int w = 20 + static_cast<int>(rng.below(481)), h = 20 + static_cast<int>(rng.below(356));
    windows.push_back({static_cast<int>(rng.below(501 - w)), static_cast<int>(rng.below(376 - h)), w, h});
  }
  windows[0] = {0, 0, 448, 224};    // exactly 2x smaller across, same size down
  windows[1] = {10, 10, 224, 224};  // a copy
  const std::size_t row = std::size_t{224} * 3;
  check(sources, windows, {224, 224, 3}, row, row * 224);
}

TEST_F(CropResizeGpu, BadOutputsAreRefused) {
  const DeviceBuffer jobs = pool_->allocate(sizeof(CropResizeJob), stream_->get(), "jobs");
  DeviceBuffer out = pool_->allocate(std::size_t{64} * 64 * 4, stream_->get(), "out");
  const auto* job = jobs.as<CropResizeJob>();
  EXPECT_THROW(crop_resize_linear(job, 1, {out.as<std::uint8_t>(), 1, {8, 8, 4}, 256, 32}, stream_->get()),
               InvalidArgument);
  EXPECT_THROW(crop_resize_linear(job, 1, {out.as<std::uint8_t>(), 1, {8, 8, 3}, 256, 23}, stream_->get()),
               InvalidArgument);
  EXPECT_THROW(crop_resize_linear(job, 1, {out.as<std::uint8_t>(), 1, {8, 8, 3}, 100, 24}, stream_->get()),
               InvalidArgument);
}

}  // namespace
}  // namespace conveyor::cuda
