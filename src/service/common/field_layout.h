// The field tensors of a job's batches, whatever their kinds: found from a built chain the way its pipeline
// lays out a batch, and carried in the job's description, so that a trainer that never built the chain checks
// every batch frame against them and lays out its buffers by them. Nothing here names a field kind.
#pragma once

#include <string>
#include <vector>

#include "conveyor/batch_source.h"
#include "conveyor/service/chain.h"
#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;

// The tensors the chain's batches carry besides pixels and labels, in Batch::fields()'s order: each kind's
// prototype (batch_field_kinds, as Dataset::batch with a given sample_shape) batching no sample.
std::vector<FieldTensorLayout> field_tensor_layouts(const Chain& chain);

void add_to_wire(const std::vector<FieldTensorLayout>& tensors, v1::ChainDescription& out);
// InvalidArgument for a description whose tensors cannot be a batch's (unknown type, too many dimensions).
std::vector<FieldTensorLayout> field_tensors_from_wire(const v1::ChainDescription& description);

// "masks uint8 (N, 224, 224); boxes float32 (N, *, 4) ..." for messages and iterator states.
std::string describe_field_tensors(const std::vector<FieldTensorLayout>& tensors);

}  // namespace conveyor::service::detail
