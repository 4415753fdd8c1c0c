// A batch as a frame and back: the same bytes, sample identities and labels, read across any slicing of the
// frame; a frame that lies about its contents is refused before anything is written out of place.
#include "src/service/common/batch_codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/batch_source.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/ops/sample_ops.h"
#include "src/service/common/field_layout.h"
#include "tests/pipeline/fixtures.h"
#include "tests/support/scenes.h"

namespace conveyor::service::detail {
namespace {

constexpr ImageShape kShape{4, 5, 3};

// The frame's bytes in one piece.
std::string flat(const Frame& frame) {
  std::string out = frame.head;
  for (const auto& range : frame.payload)
    out.append(reinterpret_cast<const char*>(range.data()), range.size());
  return out;
}

// `bytes` cut into slices of `slice` bytes, as a transport might receive them.
std::vector<std::span<const std::byte>> sliced(const std::string& bytes, std::size_t slice) {
  std::vector<std::span<const std::byte>> out;
  for (std::size_t at = 0; at < bytes.size(); at += slice)
    out.emplace_back(reinterpret_cast<const std::byte*>(bytes.data()) + at,
                     std::min(slice, bytes.size() - at));
  return out;
}

// Decodes frames into the iterator's own pool buffers, as the service's client does.
class Frames final : public BatchSource {
 public:
  Frames(std::vector<std::string> frames, std::size_t batch)
      : frames_(std::move(frames)), layout_{.batch_size = batch, .sample_shape = kShape} {}
  Frames(std::vector<std::string> frames, BatchSourceLayout layout)
      : frames_(std::move(frames)), layout_(std::move(layout)) {}
  BatchSourceLayout layout() const override { return layout_; }
  std::vector<std::string> describe() const override { return {"frames"}; }
  std::unique_ptr<BatchStream> open(BatchBuffers buffers, const PipelineOptions&, std::size_t,
                                    const BatchStreamPosition&) const override {
    return std::make_unique<Stream>(*this, std::move(buffers));
  }

 private:
  class Stream final : public BatchStream {
   public:
    Stream(const Frames& source, BatchBuffers buffers) : source_(source), buffers_(std::move(buffers)) {}
    std::optional<Batch> next() override {
      if (next_ == source_.frames_.size()) return std::nullopt;
      FrameReader reader(sliced(source_.frames_[next_], 7 + next_));
      const v1::ServerFrame head = reader.head();
      ++next_;
      return decode_batch(head.batch(), reader, *buffers_.acquire(), buffers_.layout(), next_ - 1);
    }
    BatchStreamPosition position() const override { return {}; }
    void add_stats(PipelineStats&) const override {}
    void cancel() noexcept override {}

   private:
    const Frames& source_;
    BatchBuffers buffers_;
    std::size_t next_ = 0;
  };
  std::vector<std::string> frames_;
  BatchSourceLayout layout_;
};

// Scenes with every field kind the library has: a mask, 1 + i % 4 boxes (so batches pad to different most
// boxes), tags and three keypoints per box.
class EveryField final : public SampleSource {
 public:
  explicit EveryField(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
      scenes_.push_back(testing::make_scene(40, 48, 1 + static_cast<int>(i % 4), i + 5));
  }
  std::size_t size() const override { return scenes_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits&) const override {
    sample.path = "scene " + std::to_string(i);
    sample.label = static_cast<std::int64_t>(i % 3);
    sample.encoded = scenes_[i].jpeg;
    sample.encoded_mask = scenes_[i].mask_png;
    sample.boxes.assign(scenes_[i].boxes);
    sample.tags = {static_cast<std::int64_t>(i % 5)};
    scenes_[i].add_keypoints(sample);
  }
  FieldSet fields() const override {
    auto keypoints = std::make_shared<KeypointsField>();
    keypoints->points = 3;
    return {.mask = true, .boxes = true, .tags = true, .others = {keypoints}};
  }
  std::string describe() const override { return "every field " + std::to_string(scenes_.size()); }

 private:
  std::vector<testing::Scene> scenes_;
};

BatchedDataset numbers(std::size_t count, std::size_t batch) {
  return testing::numbered_memory(count)
      .map(testing::fill_from_seed(kShape))
      .with_options({.threads = 2, .seed = 4})
      .batch(batch, kShape);
}

std::string frame_of(const Batch& batch, std::uint64_t index = 0) {
  return flat(encode_batch(batch, 3, index));
}

TEST(BatchCodec, ABatchComesBackBitForBitWhateverTheSlicing) {
  std::vector<std::string> frames;
  BatchChecksum sent;
  std::vector<SampleInfo> infos;
  for (const Batch& batch : numbers(22, 8)) {  // 8, 8, 6: the last one short
    sent.add(batch);
    for (const SampleInfo& s : batch.samples()) infos.push_back(s);
    frames.push_back(frame_of(batch));
  }
  BatchChecksum received;
  std::size_t i = 0;
  for (const Batch& batch : BatchedDataset::from_source(std::make_shared<Frames>(frames, 8))) {
    received.add(batch);
    for (const SampleInfo& s : batch.samples()) {
      ASSERT_LT(i, infos.size());
      EXPECT_EQ(s.index, infos[i].index);
      EXPECT_EQ(s.epoch, infos[i].epoch);
      EXPECT_EQ(s.seed, infos[i].seed);
      ++i;
    }
  }
  EXPECT_EQ(i, 22u);
  EXPECT_EQ(received.value(), sent.value());
}

TEST(BatchCodec, AFrameOnlyViewsItsBatchMemoryUntilSent) {
  BatchIterator it = numbers(8, 8).begin();
  const std::optional<Batch> batch = it.next();
  ASSERT_TRUE(batch);
  const Frame frame = encode_batch(*batch, 0, 0);
  ASSERT_EQ(frame.payload.size(), 2u);  // pixels and labels, no copy
  EXPECT_EQ(static_cast<const void*>(frame.payload[0].data()),
            static_cast<const void*>(batch->pixels().data()));
  EXPECT_EQ(frame.payload[0].size(), 8 * kShape.bytes());
  EXPECT_TRUE(frame.keep_alive);
}

// Decodes one (possibly damaged) frame; the error's text, or "" when it decoded.
std::string decode_error(const std::string& bytes) {
  try {
    for (const Batch& batch : BatchedDataset::from_source(std::make_shared<Frames>(std::vector{bytes}, 8)))
      (void)batch;
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "";
}

TEST(BatchCodec, ADamagedOrForeignFrameIsRefusedWithItsReason) {
  BatchIterator it = numbers(8, 8).begin();
  const std::optional<Batch> batch = it.next();
  const std::string good = frame_of(*batch);
  EXPECT_EQ(decode_error(good), "");
  EXPECT_NE(decode_error(good.substr(0, good.size() - 1)).find("ends 1 bytes before"), std::string::npos);
  EXPECT_NE(decode_error(good + "x").find("after its last tensor"), std::string::npos);
  EXPECT_NE(decode_error(good.substr(0, 3)).find("length prefix"), std::string::npos);
  std::string lying = good;
  const std::uint32_t huge = 1u << 30;
  std::memcpy(lying.data(), &huge, 4);
  EXPECT_NE(decode_error(lying).find("a header of"), std::string::npos);
  std::string garbage = good;
  for (std::size_t i = 4; i < 40; ++i) garbage[i] = static_cast<char>(0xff);
  EXPECT_NE(decode_error(garbage), "");

  // Well-formed protobuf, wrong contents: each refused before a byte is written.
  auto edited = [&](auto&& change) {
    v1::ServerFrame frame;
    std::uint32_t length = 0;
    std::memcpy(&length, good.data(), 4);
    EXPECT_TRUE(frame.ParseFromArray(good.data() + 4, static_cast<int>(length)));
    change(*frame.mutable_batch());
    std::string head = frame.SerializeAsString();
    const auto size = static_cast<std::uint32_t>(head.size());
    std::string out(4, '\0');
    std::memcpy(out.data(), &size, 4);
    return out + head + good.substr(4 + length);
  };
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) { h.set_size(9); })).find("9 samples"),
            std::string::npos);
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) { h.mutable_tensors(0)->set_dtype("float32"); })), "");
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) {
              h.mutable_tensors(0)->set_shape(2, 99);
            })).find("dimension 2"),
            std::string::npos);
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) { h.mutable_tensors(1)->set_name("masks"); })), "");
  EXPECT_NE(
      decode_error(edited([](v1::BatchHeader& h) { h.mutable_tensors(0)->set_bytes(1); })).find("announces"),
      std::string::npos);
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) { h.add_index(1); })).find("identities"),
            std::string::npos);
  EXPECT_NE(decode_error(edited([](v1::BatchHeader& h) {
              h.mutable_tensors()->RemoveLast();
            })).find("not the tensors"),
            std::string::npos);
}

}  // namespace
}  // namespace conveyor::service::detail

namespace conveyor::service::detail {
namespace {

// Every field tensor of every batch (masks, boxes and their classes, crowd flags and counts, multi-hot tags,
// keypoints and theirs) through frames, decoded against the layout the job's description carries: the same
// names, types, shapes, padding and bytes as the batches made here. The codec names none of them.
TEST(BatchCodec, EveryFieldTensorComesBackByteIdentical) {
  constexpr ImageShape shape{24, 24, 3};
  const Chain chain{Dataset::from_source(std::make_shared<EveryField>(11))
                        .map(ops::decode_random_resized_crop(24))
                        .map(ops::flip_horizontal(0.5)),
                    {.sample_shape = shape, .num_classes = 5}};
  const BatchSourceLayout layout{.batch_size = 4, .sample_shape = shape,
                                 .field_tensors = field_tensor_layouts(chain)};
  std::vector<std::string> names;
  for (const FieldTensorLayout& tensor : layout.field_tensors) names.push_back(tensor.name);
  for (const char* name : {"masks", "boxes", "box_counts", "multi_hot", "keypoints"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;

  const BatchedDataset here = chain.samples.with_options({.threads = 2, .seed = 9}).batch(4, chain.batching);
  std::vector<std::string> frames;
  for (const Batch& batch : here) frames.push_back(frame_of(batch));
  ASSERT_EQ(frames.size(), 3u);  // 4, 4, 3

  BatchIterator local = here.begin();
  std::size_t compared = 0;
  for (const Batch& received : BatchedDataset::from_source(std::make_shared<Frames>(frames, layout))) {
    const std::optional<Batch> sent = local.next();
    ASSERT_TRUE(sent);
    ASSERT_EQ(received.size(), sent->size());
    BatchChecksum a, b;
    a.add(*sent);
    b.add(received);
    EXPECT_EQ(b.value(), a.value());
    ASSERT_EQ(received.fields().size(), sent->fields().size());
    for (std::size_t i = 0; i < sent->fields().size(); ++i) {
      const BatchTensor& a = sent->fields()[i];
      const BatchTensor& b = received.fields()[i];
      SCOPED_TRACE(std::string(a.name));
      EXPECT_EQ(b.field, a.field);
      EXPECT_EQ(b.name, a.name);
      EXPECT_EQ(b.view.dtype, a.view.dtype);
      ASSERT_EQ(b.view.ndim, a.view.ndim);
      for (int d = 0; d < a.view.ndim; ++d)
        EXPECT_EQ(b.view.shape[static_cast<std::size_t>(d)], a.view.shape[static_cast<std::size_t>(d)]);
      EXPECT_EQ(b.padding.dim, a.padding.dim);
      EXPECT_EQ(b.padding.counts, a.padding.counts);
      EXPECT_EQ(b.follows_geometry, a.follows_geometry);
      ASSERT_EQ(b.view.bytes(), a.view.bytes());
      EXPECT_EQ(std::memcmp(b.view.data, a.view.data, a.view.bytes()), 0);
    }
    EXPECT_EQ(received.max_boxes(), sent->max_boxes());  // issue 35's accessors see the same tensors
    ++compared;
  }
  EXPECT_EQ(compared, 3u);
}

// A frame whose batch lacks a field tensor of the job's layout is refused, not delivered without it.
TEST(BatchCodec, AFrameWithoutAFieldTensorOfTheJobIsRefused) {
  constexpr ImageShape shape{24, 24, 3};
  const Chain chain{Dataset::from_source(std::make_shared<EveryField>(4)).map(ops::decode_center_crop(24)),
                    {.sample_shape = shape, .num_classes = 5}};
  BatchSourceLayout layout{.batch_size = 4, .sample_shape = shape, .field_tensors = field_tensor_layouts(chain)};
  std::vector<std::string> frames;
  // Batches of the same samples without the multi-hot tags (num_classes 0): a worker of another layout.
  for (const Batch& batch : chain.samples.with_options({.seed = 9}).batch(4, {.sample_shape = shape}))
    frames.push_back(frame_of(batch));
  try {
    for (const Batch& batch : BatchedDataset::from_source(std::make_shared<Frames>(frames, layout))) (void)batch;
    FAIL() << "a frame without the job's multi-hot tensor was delivered";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("malformed batch frame"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace conveyor::service::detail
