// A batch as a frame and back: the same bytes, sample identities and labels, read across any slicing of the
// frame; a frame that lies about its contents is refused before anything is written out of place.
#include "src/service/common/batch_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/batch_source.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "tests/pipeline/fixtures.h"

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
  Frames(std::vector<std::string> frames, std::size_t batch) : frames_(std::move(frames)), batch_(batch) {}
  BatchSourceLayout layout() const override { return {.batch_size = batch_, .sample_shape = kShape}; }
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
      return decode_batch(head.batch(), reader, *buffers_.acquire(), next_ - 1);
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
  std::size_t batch_;
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
