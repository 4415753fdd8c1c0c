#include "conveyor/batch_checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <vector>

namespace conveyor {
namespace {

// A batch of `size` 2x3x1 samples in a buffer of 4; pixel bytes from `first` on, labels 100 + i.
Batch make_batch(PageableBatchBuffer& buffer, std::size_t size, std::uint8_t first) {
  for (std::size_t i = 0; i < buffer.capacity(); ++i) {
    const ImageView slot = buffer.slot(i);
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x) slot.row(y)[x] = static_cast<std::uint8_t>(first + 6 * i + 3 * y + x);
    buffer.labels()[i] = 100 + static_cast<std::int64_t>(i);
  }
  return buffer.batch(size);
}

TEST(BatchChecksum, IsXxh3OverThePixelsThenTheLabelsOfEachBatchInOrder) {
  PageableBatchBuffer a(4, {2, 3, 1}), b(4, {2, 3, 1});
  const Batch first = make_batch(a, 3, 0), second = make_batch(b, 2, 50);
  std::vector<std::uint8_t> bytes;
  for (const Batch* batch : {&first, &second}) {
    bytes.insert(bytes.end(), batch->pixels().begin(), batch->pixels().end());
    const auto* labels = reinterpret_cast<const std::uint8_t*>(batch->labels().data());
    bytes.insert(bytes.end(), labels, labels + batch->labels().size_bytes());
  }
  BatchChecksum sum;
  sum.add(first);
  sum.add(second);
  EXPECT_EQ(sum.value(), XXH3_64bits(bytes.data(), bytes.size()));
}

TEST(BatchChecksum, ChangesWithOnePixelOneLabelOrTheOrder) {
  PageableBatchBuffer a(4, {2, 3, 1}), b(4, {2, 3, 1});
  const Batch first = make_batch(a, 4, 0), second = make_batch(b, 4, 50);
  BatchChecksum reference;
  reference.add(first);
  reference.add(second);

  BatchChecksum swapped;
  swapped.add(second);
  swapped.add(first);
  EXPECT_NE(swapped.value(), reference.value());

  b.slot(3).row(1)[2] ^= 1;
  BatchChecksum pixel;
  pixel.add(first);
  pixel.add(second);
  EXPECT_NE(pixel.value(), reference.value());
  b.slot(3).row(1)[2] ^= 1;

  b.labels()[0] = 7;
  BatchChecksum label;
  label.add(first);
  label.add(second);
  EXPECT_NE(label.value(), reference.value());
}

TEST(BatchChecksum, CountsOnlyTheBatchsSamplesNotTheRestOfItsBuffer) {
  PageableBatchBuffer a(4, {2, 3, 1}), b(4, {2, 3, 1});
  const Batch short_a = make_batch(a, 2, 0), short_b = make_batch(b, 2, 0);
  b.slot(3).row(0)[0] = 255;  // beyond the batch
  b.labels()[2] = -1;
  BatchChecksum sum_a, sum_b;
  sum_a.add(short_a);
  sum_b.add(short_b);
  EXPECT_EQ(sum_a.value(), sum_b.value());
}

TEST(BatchChecksum, HexIsZeroXAndSixteenDigits) {
  BatchChecksum sum;
  const std::uint8_t byte = 1;
  sum.add({&byte, 1});
  const std::string hex = sum.hex();
  ASSERT_EQ(hex.size(), 18u) << hex;
  EXPECT_EQ(hex.substr(0, 2), "0x");
  EXPECT_EQ(std::stoull(hex.substr(2), nullptr, 16), sum.value());
}

}  // namespace
}  // namespace conveyor
