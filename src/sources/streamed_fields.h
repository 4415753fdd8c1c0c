// A streamed sample's field members (TarFormat's mask and fields extensions) on their way into the pipeline's
// sample: the source stage swaps them in (no copy: the streamed sample goes back with the element's old
// buffers), the read stage parses the fields' JSON, in parallel.
#pragma once

#include <cstdint>
#include <vector>

#include "conveyor/fields.h"
#include "conveyor/sample.h"
#include "src/sources/streamed_sample.h"

namespace conveyor::detail {

// Swaps the mask member into sample's mask and the fields member (JSON) into `json`.
void take_streamed_fields(StreamedSample& streamed, Sample& sample, std::vector<std::uint8_t>& json) noexcept;
// The read stage: `json` into the sample's boxes and tags when the shards carry them (`fields`). Throws
// ShardReadError "bad_fields" naming the sample.
void read_streamed_fields(const FieldSet& fields, const std::vector<std::uint8_t>& json, Sample& sample);

}  // namespace conveyor::detail
