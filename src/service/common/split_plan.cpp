#include "src/service/common/split_plan.h"

#include <algorithm>

#include "conveyor/error.h"

namespace conveyor::service::detail {

SplitPlan::SplitPlan(const SplitGeometry& geometry) : geometry_(geometry) {
  if (geometry.batch_size == 0 || geometry.split_batches == 0 || geometry.consumers == 0)
    throw InvalidArgument("split plan: batch size, split size and consumers must be at least 1");
  const std::uint64_t n = geometry.source_size, r = geometry.consumers, b = geometry.batch_size;
  share_ = geometry.drop_uneven ? n / r : (n + r - 1) / r;
  batches_per_epoch_ = geometry.drop_remainder ? share_ / b : (share_ + b - 1) / b;
  splits_per_epoch_ = (batches_per_epoch_ + geometry.split_batches - 1) / geometry.split_batches;
}

std::optional<std::uint64_t> SplitPlan::splits() const noexcept {
  if (geometry_.epochs == 0) return std::nullopt;
  return geometry_.epochs * splits_per_epoch_;
}

std::optional<Split> SplitPlan::split(std::uint64_t index) const noexcept { return remainder(index, 0); }

std::optional<Split> SplitPlan::remainder(std::uint64_t index, std::uint64_t first) const noexcept {
  if (splits_per_epoch_ == 0) return std::nullopt;
  if (const std::optional<std::uint64_t> all = splits(); all && index >= *all) return std::nullopt;
  Split split;
  split.index = index;
  split.epoch = index / splits_per_epoch_;
  const std::uint64_t whole_first = (index % splits_per_epoch_) * geometry_.split_batches;
  const std::uint64_t whole = std::min(geometry_.split_batches, batches_per_epoch_ - whole_first);
  if (first > whole) return std::nullopt;
  split.first_batch = whole_first + first;
  split.batches = whole - first;
  split.first_element = split.first_batch * geometry_.batch_size;
  const std::uint64_t end = std::min(share_, (split.first_batch + split.batches) * geometry_.batch_size);
  split.elements = end > split.first_element ? end - split.first_element : 0;
  return split;
}

std::uint64_t default_split_batches(std::uint64_t batch_size) noexcept {
  return std::max<std::uint64_t>(1, 2048 / std::max<std::uint64_t>(1, batch_size));
}

}  // namespace conveyor::service::detail
