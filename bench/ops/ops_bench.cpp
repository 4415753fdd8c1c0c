// Image ops, one image per iteration on one thread: decode paths side by side (full, DCT-scaled, ROI,
// ROI + DCT scale), each augmentation on its own, and the fused training path
// decode_random_resized_crop(224) + flip_horizontal + distort(.4, .4, .4) as the pipeline runs it.
//
//   ops_bench --benchmark_format=json --benchmark_out=FILE     (items_per_second = images/s)
//   CONVEYOR_BENCH_IMAGES=/path/to/jpegs ops_bench              (else synthetic 500x375 JPEGs)
//
// Every benchmark first runs once over all images (buffers grow, caches warm); that warm-up is not
// timed with the rest and is reported as the counter warmup_us_per_image.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <opencv2/core.hpp>
#include <string>
#include <vector>

#include "bench_images.h"
#include "conveyor/ops.h"

namespace conveyor::bench {
namespace {

using Work = std::function<void(std::size_t)>;  // processes the i-th image of the run

constexpr int kSize = 224;
const ops::DistortOptions kJitter{.brightness = 0.4, .contrast = 0.4, .saturation = 0.4};

void run(benchmark::State& state, std::size_t images, const Work& work) {
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < images; ++i) work(i);
  const std::chrono::duration<double, std::micro> warm_up = std::chrono::steady_clock::now() - start;
  std::size_t i = 0;
  for (auto _ : state) {
    work(i++);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["warmup_us_per_image"] = warm_up.count() / static_cast<double>(images);
}

// Everything the benchmarks share: the JPEGs and, for the pixel-only ops, their decoded forms.
struct Fixture {
  BenchImages images;
  std::vector<Image> decoded;  // full decodes
  std::vector<Image> small;    // 224 x 224 resizes of them
  Image gray28 = Image(28, 28, 1);

  const std::vector<std::uint8_t>& jpeg(std::size_t i) const { return images.jpegs[i % images.jpegs.size()]; }
  std::size_t count() const { return images.jpegs.size(); }
};

// The RandomResizedCrop window of image i at iteration i (as the fused op would draw it).
ops::Rect window_of(ops::JpegDecoder& decoder, std::size_t i) {
  const ImageShape full = decoder.shape();
  Rng rng(i, ops::stream::random_resized_crop);
  return ops::random_resized_crop_window(full.height, full.width, {}, rng);
}

void register_decode(const Fixture& f) {
  const auto decode_benchmark = [&f](const char* name, bool fast, int scale) {
    benchmark::RegisterBenchmark(name, [&f, fast, scale](benchmark::State& state) {
      ops::JpegDecoder decoder;
      Image out;
      run(state, f.count(), [&](std::size_t i) {
        decoder.open(f.jpeg(i), {.fast = fast});
        out.reshape(decoder.shape(scale));
        decoder.read(out.view(), scale);
      });
    });
  };
  decode_benchmark("decode/full", false, 1);
  decode_benchmark("decode/full_fast", true, 1);
  decode_benchmark("decode/full_dct_1_2", false, 2);
  decode_benchmark("decode/full_dct_1_4", false, 4);

  // The window of a RandomResizedCrop, decoded alone; with or without the DCT scale it allows at 224.
  const auto roi_benchmark = [&f](const char* name, bool fast, bool use_scale) {
    benchmark::RegisterBenchmark(name, [&f, fast, use_scale](benchmark::State& state) {
      ops::JpegDecoder decoder;
      double pixels = 0;
      run(state, f.count(), [&](std::size_t i) {
        decoder.open(f.jpeg(i), {.fast = fast});
        ops::Rect window = window_of(decoder, i);
        const int scale = use_scale ? ops::choose_dct_scale(window.width, window.height, kSize, kSize) : 1;
        window = {window.x / scale, window.y / scale, window.width / scale, window.height / scale};
        const ConstImageView roi = decoder.read_region_view(window, scale);
        pixels += static_cast<double>(roi.width) * roi.height;
      });
      state.counters["decoded_pixels_per_image"] =
          benchmark::Counter(pixels, benchmark::Counter::kAvgIterations);
    });
  };
  roi_benchmark("decode/roi", false, false);
  roi_benchmark("decode/roi_dct", false, true);
  roi_benchmark("decode/roi_dct_fast", true, true);

  benchmark::RegisterBenchmark("decode/center_crop224", [&f](benchmark::State& state) {
    ops::JpegDecoder decoder;
    Image out(kSize, kSize, 3);
    run(state, f.count(), [&](std::size_t i) { ops::decode_center_crop(decoder, f.jpeg(i), out.view()); });
  });
}

void register_pixel_ops(const Fixture& f) {
  const auto resize_benchmark = [&f](const char* name, ops::Interpolation interpolation) {
    benchmark::RegisterBenchmark(name, [&f, interpolation](benchmark::State& state) {
      Image out(kSize, kSize, 3);
      run(state, f.count(),
          [&](std::size_t i) { ops::resize(f.decoded[i % f.count()].view(), out.view(), interpolation); });
    });
  };
  resize_benchmark("ops/resize_linear_to224", ops::Interpolation::linear);
  resize_benchmark("ops/resize_area_to224", ops::Interpolation::area);

  // In-place ops work on a private copy of the 224 x 224 images so that runs do not compound.
  const auto in_place = [&f](const char* name, std::function<void(ImageView, std::size_t)> op) {
    benchmark::RegisterBenchmark(name, [&f, op](benchmark::State& state) {
      std::vector<Image> images = f.small;
      run(state, f.count(), [&](std::size_t i) { op(images[i % images.size()].view(), i); });
    });
  };
  in_place("ops/flip_horizontal224", [](ImageView image, std::size_t) { ops::flip_horizontal(image); });
  in_place("ops/flip_vertical224", [](ImageView image, std::size_t) { ops::flip_vertical(image); });
  in_place("ops/distort224_bcs", [](ImageView image, std::size_t i) {
    Rng rng(i, ops::stream::distort);
    ops::distort(image, kJitter, rng);
  });
  in_place("ops/distort224_bcsh", [](ImageView image, std::size_t i) {
    Rng rng(i, ops::stream::distort);
    ops::distort(image, {.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1}, rng);
  });

  benchmark::RegisterBenchmark("ops/random_crop28_pad4_gray", [&f](benchmark::State& state) {
    Image out(28, 28, 1);
    run(state, f.count(), [&](std::size_t i) {
      Rng rng(i, ops::stream::random_crop);
      ops::random_crop(f.gray28.view(), out.view(), rng, 4);
    });
  });
  benchmark::RegisterBenchmark("ops/pad_reflect224_by16", [&f](benchmark::State& state) {
    Image out(kSize + 32, kSize + 32, 3);
    run(state, f.count(), [&](std::size_t i) {
      ops::pad(f.small[i % f.count()].view(), out.view(), 16, 16, 16, 16, ops::PadMode::reflect);
    });
  });
}

// The training path as a pipeline worker runs it: a recycled Sample whose slot is a batch buffer, the
// bytes copied in (standing in for the file read), then the chain of SampleOps.
void register_chains(const Fixture& f) {
  const auto chain_benchmark = [&f](const char* name, std::vector<SampleOp> chain) {
    benchmark::RegisterBenchmark(name, [&f, chain](benchmark::State& state) {
      std::vector<std::uint8_t> slot(std::size_t{kSize} * kSize * 3);
      Sample sample;
      run(state, f.count(), [&](std::size_t i) {
        sample.recycle();
        const auto& jpeg = f.jpeg(i);
        sample.encoded.assign(jpeg.begin(), jpeg.end());
        sample.seed = sample_seed(1, 0, i);
        sample.bind_slot(ImageView(slot.data(), {kSize, kSize, 3}));
        for (const SampleOp& op : chain) op.apply(sample);
        benchmark::DoNotOptimize(slot.data());
      });
    });
  };
  ops::RandomResizedCropOptions fast;
  fast.decode.fast = true;
  chain_benchmark("chain/rrc224", {ops::decode_random_resized_crop(kSize)});
  chain_benchmark("chain/rrc224_flip_distort",
                  {ops::decode_random_resized_crop(kSize), ops::flip_horizontal(), ops::distort(kJitter)});
  chain_benchmark("chain/rrc224_flip_distort_fast", {ops::decode_random_resized_crop(kSize, fast),
                                                     ops::flip_horizontal(), ops::distort(kJitter)});
  // The same augmentation without the fusion: decode everything, then crop and resize the decoded pixels.
  SampleOp crop_resize{"random_resized_crop", [](Sample& sample) {
                         Rng rng(sample.seed, ops::stream::random_resized_crop);
                         ops::random_resized_crop(sample.image(), sample.output({kSize, kSize, 3}), {}, rng);
                         sample.publish();
                       }};
  chain_benchmark("chain/full_decode_then_rrc224_flip_distort",
                  {ops::decode(), crop_resize, ops::flip_horizontal(), ops::distort(kJitter)});
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  using namespace conveyor;
  cv::setNumThreads(0);  // one image per call on one thread: no OpenCV worker threads either
  benchmark::Initialize(&argc, argv);
  bench::Fixture fixture;
  fixture.images = bench::load_bench_images();
  for (const auto& jpeg : fixture.images.jpegs) {
    fixture.decoded.push_back(ops::decode_jpeg(jpeg));
    Image small(bench::kSize, bench::kSize, 3);
    ops::resize(fixture.decoded.back().view(), small.view());
    fixture.small.push_back(std::move(small));
  }
  for (std::size_t i = 0; i < 28 * 28; ++i) fixture.gray28.data()[i] = fixture.decoded.front().data()[3 * i];
  benchmark::AddCustomContext(
      "images", fixture.images.source + ", " + std::to_string(fixture.images.jpegs.size()) + " files, mean " +
                    std::to_string(static_cast<int>(fixture.images.mean_bytes)) + " bytes");
  bench::register_decode(fixture);
  bench::register_pixel_ops(fixture);
  bench::register_chains(fixture);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
