// How gradients are grouped for the all-reduce, and when a group is ready: buckets tile each gradient array,
// respect their size, and complete on their last gradient in any order; the real backward pass reports
// every gradient once, only after its last write, in an order that fills the buckets one after another.
#include "src/train/distributed/gradient_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/random.h"
#include "src/train/layers/cpu_context.h"
#include "src/train/network.h"

namespace conveyor::train {
namespace {

ParameterLayout resnet18_layout() {
  NetworkShape shape;
  shape.batch = 2;
  shape.input = {224, 224, 3};
  shape.classes = 1000;
  ParameterLayout layout;
  Network net(resnet18(1000), shape, layout);
  return layout;
}

std::vector<ParamRef> learnable(const ParameterLayout& layout) {
  std::vector<ParamRef> refs;
  for (const ParamEntry& e : layout.entries())
    if (e.ref.group != ParamGroup::statistics) refs.push_back(e.ref);
  return refs;
}

std::size_t element_bytes(ParamGroup group, std::size_t weight_bytes) {
  return group == ParamGroup::weights ? weight_bytes : sizeof(float);
}

TEST(GradientBuckets, TileEachGradientArrayAndHoldEveryLearnableParameterOnce) {
  const ParameterLayout layout = resnet18_layout();
  const GradientBuckets buckets(layout, /*weight_bytes=*/2, std::size_t{4} << 20);
  for (const ParamGroup group : {ParamGroup::weights, ParamGroup::vectors}) {
    std::vector<GradientBucket> mine;
    for (const GradientBucket& b : buckets.buckets())
      if (b.group == group) mine.push_back(b);
    ASSERT_FALSE(mine.empty());
    std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
    EXPECT_EQ(mine.front().begin, 0u);
    EXPECT_EQ(mine.back().end, layout.size(group));
    for (std::size_t i = 1; i < mine.size(); ++i)
      EXPECT_EQ(mine[i].begin, mine[i - 1].end) << "a gap or overlap";
  }
  std::vector<std::size_t> held(buckets.buckets().size(), 0);
  for (const ParamRef& ref : learnable(layout)) {
    const std::size_t b = buckets.bucket_of(ref);
    const GradientBucket& bucket = buckets.buckets()[b];
    EXPECT_EQ(bucket.group, ref.group);
    EXPECT_GE(ref.offset, bucket.begin);
    EXPECT_LE(ref.offset + ref.count, bucket.end);
    ++held[b];
  }
  for (std::size_t b = 0; b < held.size(); ++b)
    EXPECT_EQ(held[b], buckets.buckets()[b].parameters) << "bucket " << b;
}

TEST(GradientBuckets, StayWithinTheirSizeUnlessOneParameterIsLarger) {
  const ParameterLayout layout = resnet18_layout();
  for (const std::size_t cap : {std::size_t{256} << 10, std::size_t{1} << 20, std::size_t{4} << 20}) {
    const GradientBuckets buckets(layout, 2, cap);
    for (const GradientBucket& b : buckets.buckets()) {
      const std::size_t bytes = (b.end - b.begin) * element_bytes(b.group, 2);
      if (b.parameters > 1) {
        EXPECT_LE(bytes, cap) << "cap " << cap;
      }
    }
  }
  // ResNet-18's 11.2 M bf16 weight gradients (22 MB) split into several buckets at 4 MiB; a cap larger than
  // everything leaves one bucket per array.
  const std::size_t at_4mib = GradientBuckets(layout, 2, std::size_t{4} << 20).buckets().size();
  EXPECT_GE(at_4mib, 6u);
  EXPECT_EQ(GradientBuckets(layout, 2, std::size_t{1} << 30).buckets().size(), 2u);
}

TEST(GradientBuckets, StatisticsHaveNoBucket) {
  const ParameterLayout layout = resnet18_layout();
  const GradientBuckets buckets(layout, 2, std::size_t{4} << 20);
  for (const ParamEntry& e : layout.entries()) {
    if (e.ref.group == ParamGroup::statistics) {
      EXPECT_THROW(buckets.bucket_of(e.ref), InvalidArgument) << e.name;
    }
  }
  EXPECT_THROW(GradientBuckets(layout, 2, 0), InvalidArgument);
}

TEST(GradientBuckets, ABucketCompletesOnItsLastGradientInAnyOrder) {
  const ParameterLayout layout = resnet18_layout();
  GradientBuckets buckets(layout, 2, std::size_t{1} << 20);
  std::vector<ParamRef> refs = learnable(layout);
  std::mt19937 shuffle(11);
  for (int round = 0; round < 3; ++round) {
    std::shuffle(refs.begin(), refs.end(), shuffle);
    buckets.start_step();
    std::vector<std::size_t> left(buckets.buckets().size());
    for (std::size_t b = 0; b < left.size(); ++b) left[b] = buckets.buckets()[b].parameters;
    std::size_t completed = 0;
    for (const ParamRef& ref : refs) {
      EXPECT_FALSE(buckets.complete());
      const std::size_t b = buckets.bucket_of(ref);
      const std::optional<std::size_t> done = buckets.made(ref);
      if (--left[b] == 0) {
        ASSERT_TRUE(done.has_value()) << "bucket " << b << " had its last gradient";
        EXPECT_EQ(*done, b);
        ++completed;
      } else {
        EXPECT_FALSE(done.has_value());
      }
    }
    EXPECT_EQ(completed, buckets.buckets().size());
    EXPECT_TRUE(buckets.complete());
  }
}

TEST(GradientBuckets, AGradientReportedTwiceInOneStepIsAnError) {
  const ParameterLayout layout = resnet18_layout();
  GradientBuckets buckets(layout, 2, std::size_t{4} << 20);
  const ParamRef ref = learnable(layout).front();
  EXPECT_NO_THROW(buckets.made(ref));
  EXPECT_THROW(buckets.made(ref), Error);
  buckets.start_step();
  EXPECT_NO_THROW(buckets.made(ref)) << "a new step forgets the last one's reports";
}

// The CPU reference's backward pass with a hook that copies each gradient when it is reported.
class BackwardReports : public ::testing::Test {
 protected:
  void SetUp() override {
    shape.batch = 4;
    shape.input = {8, 8, 1};
    shape.classes = 3;
    net.emplace(small_resnet(4, 2, 3), shape, layout);
    params.emplace(layout, 5);
    params->bind(ctx);
    params->set_hyper({}, 1.f);
    net->prepare(ctx, *params);
    Rng rng(9);
    float* input = net->input().as<float>();
    for (std::size_t i = 0; i < net->input().count(); ++i) input[i] = static_cast<float>(rng.uniform(-1, 1));
    for (int i = 0; i < shape.batch; ++i) net->labels()[i] = i % shape.classes;
    net->forward(*params, true);
    net->loss(shape.batch, 1.f, true);
  }

  std::vector<float> gradient(const ParamRef& ref) const {
    const float* g = ref.group == ParamGroup::weights ? static_cast<const float*>(params->weight_grad(ref))
                                                      : params->vector_grad(ref);
    return {g, g + ref.count};
  }

  NetworkShape shape;
  ParameterLayout layout;
  nn::CpuContext ctx;
  std::optional<Network> net;
  std::optional<ParameterStore> params;
};

TEST_F(BackwardReports, EveryLearnableParameterOnceAndOnlyAfterItsLastWrite) {
  std::vector<ParamRef> order;
  std::map<std::size_t, std::vector<float>> at_report;  // by (group, offset)
  auto key = [](const ParamRef& r) { return static_cast<std::size_t>(r.group) << 40 | r.offset; };
  net->backward(*params, [&](const ParamRef& ref) {
    order.push_back(ref);
    at_report[key(ref)] = gradient(ref);
  });
  const std::vector<ParamRef> all = learnable(layout);
  ASSERT_EQ(order.size(), all.size());
  for (const ParamRef& ref : all) {
    ASSERT_EQ(
        std::count_if(order.begin(), order.end(), [&](const ParamRef& r) { return key(r) == key(ref); }), 1);
    EXPECT_EQ(at_report[key(ref)], gradient(ref))
        << "the gradient at offset " << ref.offset << " changed after it was reported";
  }
  // The classifier first, the stem last.
  auto named = [&](const std::string& name) {
    for (const ParamEntry& e : layout.entries())
      if (e.name == name) return key(e.ref);
    return std::size_t{0};
  };
  EXPECT_EQ(key(order.front()), named("fc.weight"));
  EXPECT_EQ(key(order.back()), named("conv1.weight"));
}

TEST_F(BackwardReports, FillTheWeightBucketsOneAfterAnotherFromTheFirst) {
  // Small buckets, so that the small model has several.
  GradientBuckets buckets(layout, sizeof(float), 2048);
  std::vector<std::size_t> weight_buckets;
  for (std::size_t b = 0; b < buckets.buckets().size(); ++b)
    if (buckets.buckets()[b].group == ParamGroup::weights) weight_buckets.push_back(b);
  ASSERT_GE(weight_buckets.size(), 3u);
  std::vector<std::size_t> completed;
  std::size_t reports = 0, first_done_at = 0;
  buckets.start_step();
  net->backward(*params, [&](const ParamRef& ref) {
    ++reports;
    if (const std::optional<std::size_t> b = buckets.made(ref);
        b && buckets.buckets()[*b].group == ParamGroup::weights) {
      if (completed.empty()) first_done_at = reports;
      completed.push_back(*b);
    }
  });
  EXPECT_TRUE(buckets.complete());
  // Roughly in the order buckets() lists them: a block's shortcut is declared after its two convolutions
  // but its gradient comes after theirs, so a bucket ending in a shortcut may complete a little later.
  std::vector<std::size_t> sorted = completed;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, weight_buckets) << "every weight bucket completes once";
  EXPECT_EQ(completed.front(), weight_buckets.front()) << "the classifier's bucket first";
  EXPECT_LT(first_done_at, reports / 4) << "the first bucket is ready early in the backward pass";
}

}  // namespace
}  // namespace conveyor::train
