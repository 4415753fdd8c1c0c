#include "src/service/client/split_ledger.h"

#include "conveyor/error.h"

namespace conveyor::service::detail {

SplitLedger::SplitLedger(SplitPlan plan, const BatchStreamPosition& start) : plan_(std::move(plan)) {
  batches_ = start.batches;
  elements_ = start.elements;
  epoch_ = start.epoch;
  if (start.words.empty()) return;
  const std::vector<std::uint64_t>& w = start.words;
  if (w.size() < 2 || w.size() != 2 + 2 * w[1])
    throw InvalidArgument("data service iterator state: " + std::to_string(w.size()) +
                          " words do not fit its form");
  cursor_ = w[0];
  for (std::size_t i = 0; i < w[1]; ++i) {
    const std::uint64_t split = w[2 + 2 * i], delivered = w[3 + 2 * i];
    const std::optional<Split> whole = plan_.split(split);
    if (!whole || split >= cursor_ || delivered >= whole->batches)
      throw InvalidArgument("data service iterator state: split " + std::to_string(split) + " after " +
                            std::to_string(delivered) + " batches is not one of this job's");
    splits_[split] = InHand{whole->batches, delivered, delivered, nullptr, false};
  }
}

bool SplitLedger::exhausted() const noexcept {
  const std::optional<std::uint64_t> all = plan_.splits();
  return all && cursor_ >= *all;
}

void SplitLedger::take(std::uint64_t index) {
  const std::optional<Split> whole = plan_.split(index);
  if (!whole || index != cursor_)
    throw Error("data service: split " + std::to_string(index) + " handed out where " +
                std::to_string(cursor_) + " was due");
  ++cursor_;
  if (whole->batches > 0) splits_[index] = InHand{whole->batches, 0, 0, nullptr, false};
}

std::optional<SplitLedger::Work> SplitLedger::unassigned() const {
  for (const auto& [split, h] : splits_)
    if (h.maker == nullptr && h.received < h.batches) return Work{split, h.received};
  return std::nullopt;
}

void SplitLedger::assign(std::uint64_t split, Maker maker) { splits_.at(split).maker = maker; }

std::size_t SplitLedger::assigned_to(Maker maker) const {
  std::size_t n = 0;
  for (const auto& [split, h] : splits_) n += h.maker == maker && !h.ended ? 1 : 0;
  return n;
}

std::vector<std::uint64_t> SplitLedger::lose(Maker maker) {
  std::vector<std::uint64_t> lost;
  for (auto& [split, h] : splits_)
    if (h.maker == maker) {
      h.maker = nullptr;
      h.ended = false;
      if (h.received < h.batches) lost.push_back(split);
    }
  return lost;
}

bool SplitLedger::receive(std::uint64_t split, std::uint64_t batch_in_split, Maker maker) {
  const auto it = splits_.find(split);
  if (it == splits_.end()) return false;
  InHand& h = it->second;
  if (h.maker != maker || h.ended || batch_in_split != h.received || h.received >= h.batches) return false;
  ++h.received;
  return true;
}

bool SplitLedger::end(std::uint64_t split, std::uint64_t batches, Maker maker) {
  const auto it = splits_.find(split);
  if (it == splits_.end()) return split < cursor_;  // every batch delivered before its end arrived
  if (it->second.maker != maker) return false;
  InHand& h = it->second;
  h.ended = true;
  // Skipped elements (on_error = skip) may leave a split a batch short: what arrived is all there is.
  if (batches != h.received) return false;
  h.batches = h.received;
  if (h.delivered == h.batches) splits_.erase(it);
  return true;
}

void SplitLedger::rewind(std::uint64_t split, std::uint64_t batch_in_split) {
  const auto it = splits_.find(split);
  if (it == splits_.end()) return;
  InHand& h = it->second;
  if (batch_in_split < h.received) h.received = std::max(batch_in_split, h.delivered);
  h.maker = nullptr;
  h.ended = false;
}

void SplitLedger::deliver(std::uint64_t split, std::uint64_t elements) {
  const auto it = splits_.find(split);
  if (it == splits_.end())
    throw Error("data service: a batch of split " + std::to_string(split) + " not in hand");
  InHand& h = it->second;
  ++h.delivered;
  ++batches_;
  elements_ += elements;
  epoch_ = plan_.split(split)->epoch;
  if (h.delivered >= h.batches && (h.ended || h.delivered == h.batches)) splits_.erase(it);
}

std::optional<SplitLedger::Progress> SplitLedger::progress(std::uint64_t split) const {
  const auto it = splits_.find(split);
  if (it == splits_.end()) return std::nullopt;
  const InHand& h = it->second;
  return Progress{h.batches, h.received, h.delivered, h.ended};
}

std::vector<std::uint64_t> SplitLedger::splits() const {
  std::vector<std::uint64_t> out;
  for (const auto& [split, h] : splits_) out.push_back(split);
  return out;
}

std::optional<SplitLedger::Work> SplitLedger::head() const {
  if (splits_.empty()) return std::nullopt;
  const auto& [split, h] = *splits_.begin();
  return Work{split, h.delivered};
}

BatchStreamPosition SplitLedger::position() const {
  BatchStreamPosition p;
  p.words = {cursor_, splits_.size()};
  for (const auto& [split, h] : splits_) {
    p.words.push_back(split);
    p.words.push_back(h.delivered);
  }
  p.batches = batches_;
  p.elements = elements_;
  p.epoch = epoch_;
  return p;
}

}  // namespace conveyor::service::detail
