// feed_batches DIR: the same batches handed over by a DeviceFeeder on the CPU, normalized to float32;
// prints the number of images and the mean of the normalized values.
#include <conveyor/cuda/device_feeder.h>
#include <conveyor/dataset.h>
#include <conveyor/ops.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: feed_batches DIR\n");
    return 2;
  }
  const auto batches = conveyor::Dataset::image_folder(argv[1])
                           .map(conveyor::ops::decode_center_crop(32))
                           .with_options({.threads = 2, .seed = 7})
                           .batch(16);
  conveyor::ops::NormalizeParams normalize;
  normalize.mean = {127.5f, 127.5f, 127.5f, 0.f};
  normalize.std = {127.5f, 127.5f, 127.5f, 1.f};
  conveyor::DeviceFeeder feeder(conveyor::resolve(conveyor::DeviceSpec::parse("cpu")),
                                {.depth = 2, .normalize = normalize});
  std::size_t images = 0;
  double sum = 0, values = 0;
  for (const conveyor::DeviceBatch& batch : feeder.feed(batches)) {
    images += batch.size();
    const float* x = batch.images().as<const float>();
    for (std::size_t i = 0; i < batch.images().elements(); ++i) sum += x[i];
    values += static_cast<double>(batch.images().elements());
  }
  std::printf("%zu images fed, mean normalized value %.4f\n", images, sum / values);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "feed_batches: %s\n", e.what());
  return 1;
}
