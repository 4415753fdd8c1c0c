#include "fixtures.h"

#include <turbojpeg.h>
#include <xxhash.h>

#include <cstring>
#include <memory>
#include <stdexcept>

#include "conveyor/batch_checksum.h"
#include "conveyor/random.h"
#include "support/test_images.h"

namespace conveyor::testing {

SampleOp fill_from_seed(ImageShape shape, std::string name) {
  return SampleOp{
      std::move(name), [shape](Sample& sample) {
        const std::uint64_t bytes_hash = XXH3_64bits(sample.encoded.data(), sample.encoded.size());
        const ImageView out = sample.output(shape);
        const std::uint64_t base = combine_seeds(sample.seed, bytes_hash);
        for (int y = 0; y < out.height; ++y)
          for (int x = 0; x < out.width * out.channels; ++x)
            out.row(y)[x] = static_cast<std::uint8_t>(mix64(base + static_cast<std::uint64_t>(y) * 4096 + x));
        sample.publish();
      }};
}

SampleOp negate_into_new_image(std::string name) {
  return SampleOp{std::move(name), [](Sample& sample) {
                    const ConstImageView in = sample.image();
                    if (in.empty()) throw std::runtime_error("negate: no image");
                    const ImageView out = sample.output(in.shape());
                    for (int y = 0; y < in.height; ++y)
                      for (int x = 0; x < in.width * in.channels; ++x) out.row(y)[x] = 255 - in.row(y)[x];
                    sample.publish();
                  }};
}

SampleOp decode_and_crop(int size) {
  return SampleOp{"decode_and_crop", [size](Sample& sample) {
                    std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), tjDestroy);
                    int width = 0, height = 0, subsampling = 0, colorspace = 0;
                    if (tjDecompressHeader3(handle.get(), sample.encoded.data(), sample.encoded.size(),
                                            &width, &height, &subsampling, &colorspace) != 0)
                      throw std::runtime_error(std::string("not a JPEG: ") + tjGetErrorStr2(handle.get()));
                    const ImageView full = sample.output({height, width, 3});
                    if (tjDecompress2(handle.get(), sample.encoded.data(), sample.encoded.size(), full.data,
                                      width, static_cast<int>(full.stride), height, TJPF_RGB, 0) != 0)
                      throw std::runtime_error(std::string("decode: ") + tjGetErrorStr2(handle.get()));
                    sample.publish();
                    if (width < size || height < size)
                      throw std::runtime_error("image smaller than the crop");
                    Rng rng(sample.seed, 7);
                    const int top = static_cast<int>(
                        rng.below(static_cast<std::uint64_t>(height) - static_cast<std::uint64_t>(size) + 1));
                    const int left = static_cast<int>(
                        rng.below(static_cast<std::uint64_t>(width) - static_cast<std::uint64_t>(size) + 1));
                    const ConstImageView in = sample.image();
                    const ImageView out = sample.output({size, size, 3});
                    for (int y = 0; y < size; ++y)
                      std::memcpy(out.row(y), in.at(top + y, left), static_cast<std::size_t>(size) * 3);
                    sample.publish();
                  }};
}

SampleOp throw_when(bool (*fails)(std::uint64_t seed), std::string name) {
  return SampleOp{std::move(name), [fails](Sample& sample) {
                    if (fails(sample.seed)) throw std::runtime_error("boom " + std::to_string(sample.index));
                  }};
}

bool one_in_seven(std::uint64_t seed) { return mix64(seed ^ 0x77) % 7 == 0; }

Dataset numbered_memory(std::size_t count, std::int64_t classes) {
  std::vector<std::vector<std::uint8_t>> buffers(count);
  std::vector<std::int64_t> labels(count);
  for (std::size_t i = 0; i < count; ++i) {
    buffers[i].resize(sizeof(std::uint64_t));
    const std::uint64_t value = i;
    std::memcpy(buffers[i].data(), &value, sizeof value);
    labels[i] = static_cast<std::int64_t>(i) % classes;
  }
  return Dataset::memory(std::move(buffers), std::move(labels));
}

std::uint64_t number_of(const Sample& sample) {
  std::uint64_t value = 0;
  if (sample.encoded.size() != sizeof value) throw std::runtime_error("not a numbered element");
  std::memcpy(&value, sample.encoded.data(), sizeof value);
  return value;
}

std::filesystem::path make_jpeg_folder(const TempDir& dir, int classes, int per_class, int height,
                                       int width) {
  std::filesystem::path root = dir / "images";
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < per_class; ++i) {
      const std::uint64_t seed = static_cast<std::uint64_t>(c) * 1000 + static_cast<std::uint64_t>(i) + 1;
      write_file(root / ("class_" + std::to_string(c)) / ("img_" + std::to_string(i) + ".jpg"),
                 make_jpeg(height, width, 3, seed, 85));
    }
  return root;
}

std::uint64_t checksum_of(const BatchedDataset& dataset, std::vector<std::size_t>* sizes) {
  BatchChecksum sum;
  for (const Batch& batch : dataset) {
    sum.add(batch);
    if (sizes) sizes->push_back(batch.size());
  }
  return sum.value();
}

int stress_iterations(int fallback) {
  if (const char* text = std::getenv("CONVEYOR_STRESS_ITERATIONS")) {
    const int value = std::atoi(text);
    if (value > 0) return value;
  }
  return fallback;
}

}  // namespace conveyor::testing
