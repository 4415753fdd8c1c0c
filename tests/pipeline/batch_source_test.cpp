// BatchedDataset::from_source: batches made elsewhere go through the Dataset API like a chain's: written into
// the iterator's pool buffers, bounded by prefetch and held batches, resumable from an IteratorState.
#include "conveyor/batch_source.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/iterator_state.h"

namespace conveyor {
namespace {

constexpr ImageShape kShape{2, 3, 3};

// `count` batches of `size` samples; sample j of batch k has every pixel byte (k * size + j) % 251 and that
// number as its label and index. Its position is the next batch's number.
class NumberedBatches final : public BatchSource {
 public:
  NumberedBatches(std::uint64_t count, std::size_t size, std::string name = "numbered")
      : count_(count), size_(size), name_(std::move(name)) {}
  BatchSourceLayout layout() const override { return {.batch_size = size_, .sample_shape = kShape}; }
  std::vector<std::string> describe() const override {
    return {name_ + " " + std::to_string(count_) + " x " + std::to_string(size_)};
  }
  std::unique_ptr<BatchStream> open(BatchBuffers buffers, const PipelineOptions& /*options*/,
                                    std::size_t /*prefetch*/,
                                    const BatchStreamPosition& start) const override {
    return std::make_unique<Stream>(*this, std::move(buffers), start);
  }

 private:
  class Stream final : public BatchStream {
   public:
    Stream(const NumberedBatches& source, BatchBuffers buffers, const BatchStreamPosition& start)
        : source_(source),
          buffers_(std::move(buffers)),
          next_(start.words.empty() ? 0 : start.words.at(0)),
          elements_(start.elements) {}
    std::optional<Batch> next() override {
      if (next_ >= source_.count_) return std::nullopt;
      std::optional<BatchWriter> writer = buffers_.acquire();
      if (!writer) return std::nullopt;
      for (std::size_t j = 0; j < source_.size_; ++j) {
        const std::uint64_t n = next_ * source_.size_ + j;
        std::memset(writer->pixel_tensor().as<std::uint8_t>() + j * kShape.bytes(), static_cast<int>(n % 251),
                    kShape.bytes());
        writer->label_tensor().as<std::int64_t>()[j] = static_cast<std::int64_t>(n);
        writer->samples()[j] = SampleInfo{.index = n, .epoch = 0, .seed = n};
      }
      elements_ += source_.size_;
      return std::move(*writer).finish(source_.size_, next_++, 0);
    }
    BatchStreamPosition position() const override { return {{next_}, next_, elements_, 0}; }
    void add_stats(PipelineStats& stats) const override {
      stats.source_parts.push_back({.name = "numbers", .batches = next_, .elements = elements_});
    }
    void cancel() noexcept override {}

   private:
    const NumberedBatches& source_;
    BatchBuffers buffers_;
    std::uint64_t next_, elements_;
  };

  const std::uint64_t count_;
  const std::size_t size_;
  const std::string name_;
};

std::vector<std::int64_t> labels_of(BatchIterator& it, std::size_t batches = 1000) {
  std::vector<std::int64_t> out;
  for (std::size_t b = 0; b < batches; ++b) {
    std::optional<Batch> batch = it.next();
    if (!batch) break;
    for (std::size_t j = 0; j < batch->size(); ++j) {
      EXPECT_EQ(batch->image(j).data[0], batch->labels()[j] % 251);
      EXPECT_EQ(batch->samples()[j].index, static_cast<std::uint64_t>(batch->labels()[j]));
      out.push_back(batch->labels()[j]);
    }
  }
  return out;
}

TEST(BatchSource, DeliversItsBatchesThroughTheDatasetApi) {
  const BatchedDataset batches = BatchedDataset::from_source(std::make_shared<NumberedBatches>(5, 4));
  EXPECT_EQ(batches.batch_size(), 4u);
  ASSERT_TRUE(batches.sample_shape().has_value());
  EXPECT_EQ(*batches.sample_shape(), kShape);
  std::uint64_t sequence = 0;
  std::int64_t expected = 0;
  for (const Batch& batch : batches.prefetch(2)) {
    EXPECT_EQ(batch.sequence(), sequence++);
    for (std::int64_t label : batch.labels()) EXPECT_EQ(label, expected++);
  }
  EXPECT_EQ(sequence, 5u);
}

TEST(BatchSource, BuffersComeFromAPoolBoundedByPrefetchAndHeldBatches) {
  const BatchedDataset batches = BatchedDataset::from_source(std::make_shared<NumberedBatches>(50, 2))
                                     .prefetch(3)
                                     .with_options({.held_batches = 2});
  BatchIterator it = batches.begin();
  const std::vector<std::int64_t> labels = labels_of(it);
  EXPECT_EQ(labels.size(), 100u);
  const PipelineStats stats = it.stats();
  EXPECT_EQ(stats.batches, 50u);
  EXPECT_EQ(stats.elements_out, 100u);
  EXPECT_EQ(stats.pool_capacity, 3u + 2u + 1u);  // prefetch + held + the source's one in flight
  EXPECT_LE(stats.pool_buffers, stats.pool_capacity);
  ASSERT_EQ(stats.source_parts.size(), 1u);
  EXPECT_EQ(stats.source_parts[0].elements, 100u);
}

TEST(BatchSource, AnIteratorResumesFromItsState) {
  const BatchedDataset batches = BatchedDataset::from_source(std::make_shared<NumberedBatches>(6, 3));
  BatchIterator first = batches.begin();
  const std::vector<std::int64_t> head = labels_of(first, 2);
  ASSERT_EQ(head.size(), 6u);
  const IteratorState saved = IteratorState::from_json(first.state().to_json());
  EXPECT_EQ(saved.batches(), 2u);
  EXPECT_EQ(saved.elements(), 6u);
  BatchIterator resumed = batches.begin(saved);
  const std::vector<std::int64_t> rest = labels_of(resumed);
  ASSERT_EQ(rest.size(), 12u);
  EXPECT_EQ(rest.front(), 6);
  EXPECT_EQ(rest.back(), 17);
  EXPECT_EQ(resumed.stats().elements_out, 18u);  // counting what the state had delivered
}

TEST(BatchSource, AStateOfOtherBatchesIsRefused) {
  BatchIterator it = BatchedDataset::from_source(std::make_shared<NumberedBatches>(6, 3)).begin();
  (void)it.next();
  const IteratorState state = it.state();
  const BatchedDataset other = BatchedDataset::from_source(std::make_shared<NumberedBatches>(6, 3, "other"));
  EXPECT_THROW((void)other.begin(state), InvalidArgument);
  const BatchedDataset reseeded =
      BatchedDataset::from_source(std::make_shared<NumberedBatches>(6, 3)).with_options({.seed = 9});
  EXPECT_THROW((void)reseeded.begin(state), InvalidArgument);
}

TEST(BatchSource, HasNoSamplesToReplace) {
  const BatchedDataset batches = BatchedDataset::from_source(std::make_shared<NumberedBatches>(1, 1));
  EXPECT_EQ(batches.samples().source_size(), 0u);
  EXPECT_THROW((void)batches.with_samples(batches.samples()), InvalidArgument);
  EXPECT_THROW((void)BatchedDataset::from_source(nullptr), InvalidArgument);
}

}  // namespace
}  // namespace conveyor
