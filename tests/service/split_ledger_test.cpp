// The trainer's account of its splits, on which exactly-once rests: a lost maker's splits come back from
// their first batch not received, a batch out of turn is refused, and a position restores what was delivered.
#include "src/service/client/split_ledger.h"

#include <gtest/gtest.h>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

const int kA = 1, kB = 2;
const SplitLedger::Maker a = &kA, b = &kB;

SplitPlan plan() { return SplitPlan({.source_size = 40, .batch_size = 4, .split_batches = 3, .epochs = 1}); }

TEST(SplitLedger, ALostMakersSplitsComeBackFromTheirFirstBatchNotReceived) {
  SplitLedger ledger(plan(), {});
  ledger.take(0);
  ledger.take(1);
  ledger.assign(0, a);
  ledger.assign(1, a);
  EXPECT_TRUE(ledger.receive(0, 0, a));
  EXPECT_TRUE(ledger.receive(0, 1, a));
  EXPECT_TRUE(ledger.receive(1, 0, a));
  ledger.deliver(0, 4);
  EXPECT_EQ(ledger.lose(a), (std::vector<std::uint64_t>{0, 1}));
  // Batch 1 of split 0 arrived before the loss: the rest starts at 2, not at what was delivered (1).
  const std::optional<SplitLedger::Work> again = ledger.unassigned();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->split, 0u);
  EXPECT_EQ(again->first_batch, 2u);
  ledger.assign(0, b);
  EXPECT_FALSE(ledger.receive(0, 2, a)) << "the lost maker's late frame";
  EXPECT_FALSE(ledger.receive(0, 1, b)) << "a batch received already";
  EXPECT_FALSE(ledger.receive(0, 3, b)) << "a gap";
  EXPECT_TRUE(ledger.receive(0, 2, b));
  EXPECT_TRUE(ledger.end(0, 3, b));
  EXPECT_EQ(ledger.unassigned()->split, 1u);
  EXPECT_EQ(ledger.unassigned()->first_batch, 1u);
}

TEST(SplitLedger, ASplitLeavesOnceDeliveredWhole) {
  SplitLedger ledger(plan(), {});
  for (std::uint64_t k = 0; k < 4; ++k) ledger.take(k);  // 10 batches: 3, 3, 3, 1
  EXPECT_TRUE(ledger.exhausted());
  for (std::uint64_t k = 0; k < 4; ++k) {
    ledger.assign(k, a);
    const std::uint64_t n = k == 3 ? 1 : 3;
    for (std::uint64_t i = 0; i < n; ++i) {
      EXPECT_TRUE(ledger.receive(k, i, a));
      ledger.deliver(k, 4);
    }
    EXPECT_TRUE(ledger.end(k, n, a));  // after its batches were delivered: nothing left to do
  }
  EXPECT_TRUE(ledger.finished());
  EXPECT_EQ(ledger.position().batches, 10u);
  EXPECT_EQ(ledger.position().elements, 40u);
}

TEST(SplitLedger, APositionRestoresWhatWasDelivered) {
  SplitLedger ledger(plan(), {});
  for (std::uint64_t k = 0; k < 3; ++k) ledger.take(k);
  ledger.assign(1, a);
  ledger.assign(2, b);
  EXPECT_TRUE(ledger.receive(1, 0, a));
  EXPECT_TRUE(ledger.receive(1, 1, a));  // received, not delivered: made again after a restart
  ledger.deliver(1, 4);
  const BatchStreamPosition saved = ledger.position();
  EXPECT_EQ(saved.words, (std::vector<std::uint64_t>{3, 3, 0, 0, 1, 1, 2, 0}));
  SplitLedger restored(plan(), saved);
  EXPECT_EQ(restored.cursor(), 3u);
  EXPECT_EQ(restored.unassigned()->split, 0u);
  restored.assign(0, a);
  EXPECT_EQ(restored.unassigned()->split, 1u);
  EXPECT_EQ(restored.unassigned()->first_batch, 1u);
  EXPECT_THROW(SplitLedger(plan(), BatchStreamPosition{{3, 1, 7, 0}}), InvalidArgument);
  EXPECT_THROW(SplitLedger(plan(), BatchStreamPosition{{3, 2, 0}}), InvalidArgument);
  EXPECT_THROW(ledger.take(5), Error);
}

}  // namespace
}  // namespace conveyor::service::detail
