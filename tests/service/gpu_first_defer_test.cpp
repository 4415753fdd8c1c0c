// The deferral of a trainer's own splits while workers serve it: every sample to the GPU once the consumer's
// stage takes deferred samples, the consumer's own answer otherwise, and the consumer hears everything.
#include "src/service/client/gpu_first_defer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "conveyor/sample.h"

namespace conveyor::service::detail {
namespace {

// A consumer's policy that defers even sample indices, taking or not as the test says, and records what it
// was told.
class EvenIndices final : public DeferPolicy {
 public:
  bool should_defer(const Sample& sample) noexcept override {
    ++asked;
    return sample.index % 2 == 0;
  }
  void declined(const Sample&, const char* reason) noexcept override { reasons.emplace_back(reason); }
  void spent(bool deferred, std::chrono::nanoseconds time) noexcept override {
    (deferred ? deferred_ns : decoded_ns) += time.count();
  }
  bool taking() const noexcept override { return is_taking; }

  bool is_taking = true;
  int asked = 0;
  std::vector<std::string> reasons;
  long long deferred_ns = 0, decoded_ns = 0;
};

int deferred_of_ten(GpuFirstDefer& policy) {
  int n = 0;
  for (std::uint64_t i = 0; i < 10; ++i) {
    Sample sample;
    sample.index = i;
    n += policy.should_defer(sample) ? 1 : 0;
  }
  return n;
}

TEST(GpuFirstDefer, WithoutWorkersTheConsumersPolicyDecides) {
  auto consumer = std::make_shared<EvenIndices>();
  GpuFirstDefer policy(consumer);
  EXPECT_FALSE(policy.workers_serving());
  EXPECT_EQ(deferred_of_ten(policy), 5);
  EXPECT_EQ(consumer->asked, 10);
}

TEST(GpuFirstDefer, WhileWorkersServeEverySampleGoesToTheGpu) {
  auto consumer = std::make_shared<EvenIndices>();
  GpuFirstDefer policy(consumer);
  policy.set_workers_serving(true);
  EXPECT_EQ(deferred_of_ten(policy), 10);
  EXPECT_EQ(consumer->asked, 10) << "the consumer's policy is still asked";
  policy.set_workers_serving(false);  // the workers were lost
  EXPECT_EQ(deferred_of_ten(policy), 5);
}

TEST(GpuFirstDefer, NothingBeyondTheConsumersAnswerWhileItsStageIsNotTaking) {
  auto consumer = std::make_shared<EvenIndices>();
  consumer->is_taking = false;  // a feeder starting at once: nvJPEG not ready yet
  GpuFirstDefer policy(consumer);
  policy.set_workers_serving(true);
  EXPECT_FALSE(policy.taking());
  EXPECT_EQ(deferred_of_ten(policy), 5);
  consumer->is_taking = true;
  EXPECT_EQ(deferred_of_ten(policy), 10);
}

TEST(GpuFirstDefer, TheConsumerHearsDeclinesAndTimes) {
  auto consumer = std::make_shared<EvenIndices>();
  GpuFirstDefer policy(consumer);
  Sample sample;
  policy.declined(sample, "cmyk");
  policy.spent(true, std::chrono::nanoseconds(30));
  policy.spent(false, std::chrono::nanoseconds(700));
  EXPECT_EQ(consumer->reasons, std::vector<std::string>{"cmyk"});
  EXPECT_EQ(consumer->deferred_ns, 30);
  EXPECT_EQ(consumer->decoded_ns, 700);
}

}  // namespace
}  // namespace conveyor::service::detail
