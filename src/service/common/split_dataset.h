// The batches of one split, as a worker streams them and a trainer's own cores make them: the same function
// in both places, so a split is the same bytes wherever it runs.
#pragma once

#include <cstdint>

#include "conveyor/dataset.h"
#include "conveyor/service/chain.h"
#include "src/service/common/split_plan.h"
#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;

// The job's split plan for a chain of `source_size` elements.
SplitPlan plan_of(const v1::JobGeometry& geometry, std::uint64_t source_size);

// Split `split` of consumer `consumer`: the chain's samples in the job's order (the whole-epoch shuffle from
// the chain's seed, this consumer's even share), the split's range of its epoch, batched as the chain says.
// `where` sets how it runs (threads, CPUs, host memory, held batches, trace); the pipeline is deterministic
// (batches in order: a split handed out again skips exactly what was delivered).
BatchedDataset split_batches(const Chain& chain, std::uint64_t seed, const v1::JobGeometry& geometry,
                             std::uint64_t consumer, const Split& split, const PipelineOptionChanges& where);

}  // namespace conveyor::service::detail
