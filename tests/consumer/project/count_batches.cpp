// count_batches DIR: decodes every JPEG of an ImageFolder tree into 32x32 crops, batches them and prints
// how many batches and images came out, with a checksum of their bytes and labels.
#include <conveyor/batch_checksum.h>
#include <conveyor/dataset.h>
#include <conveyor/ops.h>
#include <conveyor/version.h>

#include <cstdio>
#include <exception>

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: count_batches DIR\n");
    return 2;
  }
  const auto batches = conveyor::Dataset::image_folder(argv[1])
                           .map(conveyor::ops::decode_center_crop(32))
                           .with_options({.threads = 2, .seed = 7})
                           .batch(16)
                           .prefetch(2);
  std::size_t count = 0, images = 0;
  conveyor::BatchChecksum checksum;
  for (const conveyor::Batch& batch : batches) {
    ++count;
    images += batch.size();
    checksum.add(batch);
  }
  std::printf("conveyor %s (headers %s): %zu batches, %zu images, checksum %s\n", conveyor::library_version(),
              CONVEYOR_VERSION_STRING, count, images, checksum.hex().c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "count_batches: %s\n", e.what());
  return 1;
}
