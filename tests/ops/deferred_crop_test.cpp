// decode_random_resized_crop as an op that can defer (conveyor/defer.h): what it leaves for the decoder after
// batching, which images it keeps for itself and why, and decode_deferred_crop, its CPU twin for a deferred
// sample, which must give the op's own pixels bit for bit.
#include "conveyor/ops/deferred_crop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "jpeg_fixtures.h"
#include "support/test_images.h"

namespace conveyor::ops {
namespace {

// Defers whatever it is asked about (or nothing), and remembers what it heard.
class RecordingPolicy final : public DeferPolicy {
 public:
  explicit RecordingPolicy(bool defer) : defer_(defer) {}
  bool should_defer(const Sample&) noexcept override {
    ++asked;
    return defer_;
  }
  void declined(const Sample&, const char* reason) noexcept override {
    std::lock_guard lock(mutex);
    ++declined_for[reason];
  }
  void spent(bool deferred, std::chrono::nanoseconds time) noexcept override {
    (deferred ? deferred_calls : decoded_calls)++;
    EXPECT_GE(time.count(), 0);
  }
  std::atomic<int> asked{0}, deferred_calls{0}, decoded_calls{0};
  std::mutex mutex;
  std::map<std::string, int> declined_for;

 private:
  bool defer_;
};

struct Outcome {
  bool deferred = false;
  std::vector<std::uint8_t> slot;  // the slot's bytes after the op
  std::vector<std::byte> descriptor;
};

// Runs the op on one sample bound to a slot of `shape`, with `policy` offered (or none).
Outcome run_op(const SampleOp& op, const std::vector<std::uint8_t>& jpeg, std::uint64_t seed,
               ImageShape shape, DeferPolicy* policy) {
  Outcome outcome;
  outcome.slot.assign(shape.bytes(), 0xA5);
  Sample sample;
  sample.encoded = jpeg;
  sample.seed = seed;
  sample.bind_slot(ImageView(outcome.slot.data(), shape));
  sample.offer_defer(policy);
  op.apply(sample);
  if (!sample.deferred() && !sample.in_slot()) {
    const ConstImageView image = sample.image();
    for (int y = 0; y < image.height; ++y)
      std::copy(image.row(y), image.row(y) + static_cast<std::ptrdiff_t>(image.width) * image.channels,
                outcome.slot.data() + static_cast<std::size_t>(y) * image.width * image.channels);
  }
  outcome.deferred = sample.deferred();
  const auto descriptor = sample.deferred_descriptor();
  outcome.descriptor.assign(descriptor.begin(), descriptor.end());
  return outcome;
}

TEST(DeferredCrop, TheOpDefersWithTheWindowItWouldHaveDecoded) {
  const SampleOp op = decode_random_resized_crop(48);
  RecordingPolicy policy(true);
  for (int i = 0; i < 12; ++i) {
    const auto jpeg = testing::make_jpeg(90 + 7 * i, 120 - 3 * i, 3, 10 + i);
    const std::uint64_t seed = sample_seed(3, 0, i);
    const Outcome outcome = run_op(op, jpeg, seed, {48, 48, 3}, &policy);
    ASSERT_TRUE(outcome.deferred) << "image " << i;
    const std::optional<DeferredCrop> crop = read_deferred_crop(outcome.descriptor);
    ASSERT_TRUE(crop.has_value()) << "image " << i << ": the descriptor is not a DeferredCrop";
    const Rect expected =
        draw_random_resized_crop_window(90 + 7 * i, 120 - 3 * i, {}, seed, op_stream(stream::random_resized_crop, 0));
    EXPECT_EQ(crop->window, expected) << "image " << i;
    EXPECT_EQ(crop->image_width, 120 - 3 * i);
    EXPECT_EQ(crop->image_height, 90 + 7 * i);
    EXPECT_EQ(crop->output, (ImageShape{48, 48, 3}));
    EXPECT_TRUE(
        std::all_of(outcome.slot.begin(), outcome.slot.end(), [](std::uint8_t v) { return v == 0xA5; }))
        << "image " << i << ": a deferred sample's slot was written";
  }
  EXPECT_EQ(policy.asked, 12);
  EXPECT_EQ(policy.deferred_calls, 12);
  EXPECT_EQ(policy.decoded_calls, 0);
}

TEST(DeferredCrop, DecodingTheDeferredSampleOnTheCpuGivesTheOpsOwnPixels) {
  const SampleOp op = decode_random_resized_crop(40);
  RecordingPolicy defer_all(true);
  for (int i = 0; i < 16; ++i) {
    const bool progressive = i % 4 == 3;
    const auto jpeg = testing::make_jpeg(150 + 11 * i, 200 - 5 * i, 3, 50 + i, 85, progressive);
    const std::uint64_t seed = sample_seed(9, 1, i);
    const Outcome cpu = run_op(op, jpeg, seed, {40, 40, 3}, nullptr);
    ASSERT_FALSE(cpu.deferred);
    const Outcome deferred = run_op(op, jpeg, seed, {40, 40, 3}, &defer_all);
    ASSERT_TRUE(deferred.deferred);
    std::vector<std::uint8_t> out(cpu.slot.size());
    decode_deferred_crop(jpeg, *read_deferred_crop(deferred.descriptor), ImageView(out.data(), {40, 40, 3}));
    EXPECT_EQ(out, cpu.slot) << "image " << i << (progressive ? " (progressive)" : "");
  }
}

TEST(DeferredCrop, WithoutAPolicyOrWhenToldNotToTheOpDecodesAsBefore) {
  const SampleOp op = decode_random_resized_crop(32);
  const auto jpeg = testing::make_jpeg(100, 140, 3, 4);
  RecordingPolicy keep(false);
  const Outcome plain = run_op(op, jpeg, 17, {32, 32, 3}, nullptr);
  const Outcome asked = run_op(op, jpeg, 17, {32, 32, 3}, &keep);
  EXPECT_FALSE(asked.deferred);
  EXPECT_EQ(asked.slot, plain.slot);
  EXPECT_EQ(keep.asked, 1);
  EXPECT_EQ(keep.decoded_calls, 1);
}

TEST(DeferredCrop, ImagesTheDecoderAfterBatchingCannotTakeAreDecodedHereAndCountedByReason) {
  struct Case {
    std::string reason;
    std::vector<std::uint8_t> jpeg;
    ImageShape slot;
    RandomResizedCropOptions options;
  };
  const Image rgb = testing::make_picture(64, 80, 3, 5);
  const Image cmyk = testing::make_picture(64, 80, 4, 6);
  RandomResizedCropOptions upright;
  upright.decode.apply_exif_orientation = true;
  RandomResizedCropOptions area;
  area.interpolation = Interpolation::area;
  RandomResizedCropOptions keep_gray;
  keep_gray.decode.color = ColorMode::keep;
  const std::vector<Case> cases = {
      {"cmyk", testing::encode_cmyk_jpeg(cmyk.view()), {24, 24, 3}, {}},
      {"arithmetic_coding", testing::encode_with_libjpeg(rgb.view(), {.arithmetic = true}), {24, 24, 3}, {}},
      {"exif_orientation",
       testing::with_exif_orientation(testing::encode_jpeg(rgb.view()), 6),
       {24, 24, 3},
       upright},
      {"gray", testing::make_jpeg(64, 80, 1, 7), {24, 24, 3}, {}},
      {"channels", testing::make_jpeg(64, 80, 1, 7), {24, 24, 3}, keep_gray},
      {"interpolation", testing::encode_jpeg(rgb.view()), {24, 24, 3}, area},
  };
  for (const Case& c : cases) {
    RecordingPolicy policy(true);
    const SampleOp op = decode_random_resized_crop(24, c.options);
    if (c.reason == "channels") {
      // The op decodes the gray file to one channel; the slot wants three: the CPU path reports the
      // mismatch in the batch stage, so the op must not defer it into a slot of the wrong shape.
      Sample sample;
      sample.encoded = c.jpeg;
      std::vector<std::uint8_t> slot(c.slot.bytes());
      sample.bind_slot(ImageView(slot.data(), c.slot));
      sample.offer_defer(&policy);
      op.apply(sample);
      EXPECT_FALSE(sample.deferred());
      EXPECT_EQ(sample.image().channels, 1);
    } else {
      const Outcome plain = run_op(op, c.jpeg, 21, c.slot, nullptr);
      const Outcome asked = run_op(op, c.jpeg, 21, c.slot, &policy);
      EXPECT_FALSE(asked.deferred) << c.reason;
      EXPECT_EQ(asked.slot, plain.slot) << c.reason << ": decoded here, it must be the op's usual result";
    }
    EXPECT_EQ(policy.declined_for[c.reason], 1) << "expected one refusal for " << c.reason;
    EXPECT_EQ(policy.declined_for.size(), 1u) << c.reason;
  }
}

TEST(DeferredCrop, ForeignOrDamagedDescriptorsAreNotReadAsCrops) {
  DeferredCrop crop;
  crop.window = {1, 2, 3, 4};
  const auto bytes = as_bytes(crop);
  ASSERT_TRUE(read_deferred_crop(bytes).has_value());
  EXPECT_EQ(read_deferred_crop(bytes)->window, crop.window);
  EXPECT_FALSE(read_deferred_crop(bytes.first(bytes.size() - 1)).has_value());
  std::vector<std::byte> other(bytes.begin(), bytes.end());
  other[0] = std::byte{0};
  EXPECT_FALSE(read_deferred_crop(other).has_value());
  EXPECT_FALSE(read_deferred_crop({}).has_value());
}

TEST(DeferredCrop, DecodingRefusesAnotherImageOrOutput) {
  const auto jpeg = testing::make_jpeg(60, 80, 3, 8);
  DeferredCrop crop;
  crop.window = {0, 0, 40, 30};
  crop.image_width = 80;
  crop.image_height = 60;
  crop.output = {16, 16, 3};
  std::vector<std::uint8_t> out(16 * 16 * 3);
  EXPECT_NO_THROW(decode_deferred_crop(jpeg, crop, ImageView(out.data(), {16, 16, 3})));
  EXPECT_THROW(decode_deferred_crop(jpeg, crop, ImageView(out.data(), {16, 8, 3})), InvalidArgument);
  crop.image_width = 81;
  EXPECT_THROW(decode_deferred_crop(jpeg, crop, ImageView(out.data(), {16, 16, 3})), InvalidArgument);
}

TEST(DeferredCrop, SampleDeferWithoutAnOfferIsRefused) {
  Sample sample;
  const DeferredCrop crop;
  EXPECT_THROW(sample.defer(as_bytes(crop)), InvalidArgument);
  RecordingPolicy policy(true);
  sample.offer_defer(&policy);
  const std::vector<std::byte> too_long(kMaxDeferredDescriptor + 1);
  EXPECT_THROW(sample.defer(too_long), InvalidArgument);
  EXPECT_FALSE(sample.deferred());
  sample.defer(as_bytes(crop));
  EXPECT_TRUE(sample.deferred());
  sample.recycle();
  EXPECT_FALSE(sample.deferred());
  EXPECT_EQ(sample.defer_policy(), nullptr);
}

}  // namespace
}  // namespace conveyor::ops
