// The first link of ElementOrder for a streamed source (tar shards): each epoch it plans this rank's
// segments and starts a ShardStreamer on them; next() hands out the streamed samples as elements that
// already carry their bytes. See src/sources/shard_set.h for the design. Its state is (epoch, samples
// emitted); a restore re-reads the epoch up to there (a tar stream cannot seek to a sample). It has no
// random access, so a whole-epoch shuffle cannot follow it.
#pragma once

#include <cstddef>
#include <memory>

#include "src/pipeline/element_order.h"

namespace conveyor::detail {

struct ShardSet;

// in_order = false: the ShardStreamer's as-ready interleave (its state is then no position to resume at).
std::unique_ptr<ElementOrder::Stage> make_stream_stage(std::shared_ptr<const ShardSet> shards,
                                                       std::size_t max_member_bytes, bool in_order);

}  // namespace conveyor::detail
