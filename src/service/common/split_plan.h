// How a job's epochs are cut into splits: a pure function of the job, so that the dispatcher, every worker
// and every trainer agree on what split k of consumer r is without asking each other.
//
// Each consumer (a data-parallel rank) gets its own share of every epoch's one shuffled order, evened out
// (shard(R, r, pad) or drop: as many elements for every rank), cut into batches, the batches into splits of
// split_batches. Split k of a consumer is epoch k / splits_per_epoch, batches [first, first + count) of that
// epoch's share. Batches never span two epochs: an epoch's last batch is short (or left out with
// drop_remainder).
#pragma once

#include <cstdint>
#include <optional>

namespace conveyor::service::detail {

struct SplitGeometry {
  std::uint64_t source_size = 0;
  std::uint64_t consumers = 1;
  std::uint64_t batch_size = 1;
  std::uint64_t split_batches = 1;
  std::uint64_t epochs = 0;  // 0: forever
  bool drop_remainder = false;
  bool drop_uneven = false;
};

struct Split {
  std::uint64_t index = 0;  // in the consumer's sequence
  std::uint64_t epoch = 0;
  std::uint64_t first_batch = 0;  // in the epoch's share
  std::uint64_t batches = 0;
  std::uint64_t first_element = 0;  // position in the epoch's share (Dataset::epoch_range)
  std::uint64_t elements = 0;
};

class SplitPlan {
 public:
  // Throws InvalidArgument for a zero batch size, split size or consumer count.
  explicit SplitPlan(const SplitGeometry& geometry);

  // Elements of one consumer's share of an epoch, and its batches and splits.
  std::uint64_t share() const noexcept { return share_; }
  std::uint64_t batches_per_epoch() const noexcept { return batches_per_epoch_; }
  std::uint64_t splits_per_epoch() const noexcept { return splits_per_epoch_; }
  // Splits in all epochs; nullopt: forever.
  std::optional<std::uint64_t> splits() const noexcept;
  // Split `index`, or nullopt past the end.
  std::optional<Split> split(std::uint64_t index) const noexcept;
  // Split `index` from its batch `first` on (a split handed out again after `first` batches were delivered).
  std::optional<Split> remainder(std::uint64_t index, std::uint64_t first) const noexcept;
  const SplitGeometry& geometry() const noexcept { return geometry_; }

 private:
  SplitGeometry geometry_;
  std::uint64_t share_ = 0, batches_per_epoch_ = 0, splits_per_epoch_ = 0;
};

// split_batches when the trainer leaves it to the service: about 2,048 samples a split, so that a split is a
// fraction of a second of a worker's work (its pipeline's start and end amortized) and the epoch's tail
// short.
std::uint64_t default_split_batches(std::uint64_t batch_size) noexcept;

}  // namespace conveyor::service::detail
