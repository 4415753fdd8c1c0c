#include "src/service/common/split_dataset.h"

namespace conveyor::service::detail {

SplitPlan plan_of(const v1::JobGeometry& geometry, std::uint64_t source_size) {
  return SplitPlan(SplitGeometry{.source_size = source_size,
                                 .consumers = geometry.consumers(),
                                 .batch_size = geometry.batch_size(),
                                 .split_batches = geometry.split_batches(),
                                 .epochs = geometry.epochs(),
                                 .drop_remainder = geometry.drop_remainder(),
                                 .drop_uneven = geometry.drop_uneven()});
}

BatchedDataset split_batches(const Chain& chain, std::uint64_t seed, const v1::JobGeometry& geometry,
                             std::uint64_t consumer, const Split& split, const PipelineOptionChanges& where) {
  // The seed first: the whole-epoch shuffle's own seed derives from it when the order is planned.
  Dataset order = chain.samples.with_options({.seed = seed});
  if (geometry.shuffle()) order = order.shuffle();
  order = order
              .shard(geometry.consumers(), consumer,
                     geometry.drop_uneven() ? ShardRemainder::drop : ShardRemainder::pad)
              .epoch_range(split.epoch, split.first_element, split.elements);
  PipelineOptionChanges options = where;
  options.seed = seed;
  options.deterministic = true;
  BatchOptions batching = chain.batching;
  batching.drop_remainder = false;  // the plan leaves a dropped remainder out of every split already
  return order.with_options(options).batch(geometry.batch_size(), batching).prefetch(2);
}

}  // namespace conveyor::service::detail
