// The shards of a Dataset::tar_shards source: where each one is, how many samples it holds (from a shard
// index, or counted), and how to read them. Immutable once made; shared by every iterator.
//
// How a streaming source fits a pipeline built for random-access sources
// ----------------------------------------------------------------------
// File and memory sources are tables (path i, label i): the serial source stage picks element indices
// (shuffle, repeat, shard, skip and take act on indices) and the parallel read stage loads element i's
// bytes. A tar shard can only be read front to back (a file could seek, an HTTP stream cannot), so here
// the bytes travel with the element from the start:
// 1. Identity. An epoch's order is the shards in that epoch's order (a permutation drawn from (seed,
//    epoch), or the order given), each shard's samples in stored order. A sample's index is its position
//    in that order, so a sample keeps its index, its seed and so its pixels at any thread count and any
//    world size (determinism, as for the other sources). See shard_plan.h.
// 2. Ranks. Each rank reads a contiguous, balanced range of the epoch's order: whole shards, except at
//    most one at each end, shared with its neighbour (each reads its part). The ranges partition the
//    epoch (every sample exactly once); ShardRemainder pads a short rank with one repeat of an early
//    sample (flagged) or drops the epoch's last n mod world samples, so every rank gets the same count.
//    A rank must know where its range starts without reading the shards before it: each shard's count
//    comes from the shard index (make_shards writes one) or, for local files, from their headers, read
//    once when the set is made. A single rank needs no counts.
// 3. Streaming. Every epoch the stream stage (src/pipeline/stream_stage.h) plans the rank's segments and
//    a ShardStreamer reads them on threads of its own (waiting on disks and servers is no work for the
//    arena's cores): parallel_shards shards at once, queued_samples samples ahead per shard. Memory is
//    bounded by configuration, never a whole shard. Samples come out interleaved, one from each shard
//    being read in turn, whichever thread was faster, so the stream is the same in every run; the
//    indices stay the epoch order's, so interleaving needs the counts (local files are counted when the
//    set is made; URLs need an index, else they are read one after another).
// 4. Into the pipeline. The serial source stage takes the next streamed sample and swaps its bytes into
//    the element (the streamed sample returns to a pool holding the element's old buffer: no copy, and no
//    allocation once warm); the parallel read stage has nothing left to read. The ordering methods work
//    on as before: shuffle() is WebDataset's sample shuffle buffer over the rank's stream (it holds the
//    samples' bytes: its size is memory) but keeps the indices; repeat() restarts the stream stage with
//    the next epoch (a new shard order, a new plan); skip and take count streamed elements.
// 5. Errors. A sample that breaks the format carries its error (a kind, and a message naming the shard,
//    the member and the byte offset) to its place in the stream, where the read stage raises it:
//    on_error = fail stops there, skip counts it by kind. A shard that breaks off (truncated, unreadable,
//    an HTTP failure after the retries) owes the samples it did not deliver as failed elements, so the
//    element count does not change, nor (with more than one rank, see ShardRemainder) the batch count.
// 6. Shutdown. The iterator's destructor cancels the streamer: its waits end, an HTTP transfer stops
//    within 100 ms, and its threads are joined.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/shards.h"
#include "src/sources/shard_opener.h"
#include "src/sources/tar_samples.h"

namespace conveyor::detail {

struct ShardInfo {
  std::string location;                  // path or URL
  std::optional<std::uint64_t> samples;  // nullopt: not known (then only one rank may read the set)
};

struct ShardSet {
  std::vector<ShardInfo> shards;
  TarShardOptions options;
  TarFormat format;  // options' extensions, lower case
  // Opens the shards (files, URLs, s3://, the cache) and counts the remote reads: shared, like the set, by
  // every iterator.
  std::shared_ptr<ShardOpener> opener;

  // Every shard's sample count is known.
  bool counted() const noexcept;
  // Samples in all shards (0 unless counted()).
  std::uint64_t total() const noexcept;
};

// Checks the options, replaces each s3:// prefix ("s3://bucket/train/") by the shards listed under it,
// counts the shards' samples when several ranks split them and some count is missing (local files are
// counted by reading their headers; a remote shard's count must come from an index), and makes the set.
// `opener` is the one that read the index, if any (null: a new one). Throws InvalidArgument or IoError
// naming the shard.
ShardSet make_shard_set(std::vector<ShardInfo> shards, const TarShardOptions& options,
                        std::shared_ptr<ShardOpener> opener = nullptr);

// The shards listed by a wids shard index (WebDataset's JSON format, which make_shards writes):
//   {"__kind__": "wids-shard-index-v1", "shardlist": [{"url": "shard-000000.tar", "nsamples": 1000}, ...]}
// A relative "url" is relative to the index's own folder or URL. Throws InvalidArgument naming the index
// and what is wrong with it.
std::vector<ShardInfo> parse_shard_index(const std::string& json, const std::string& index_location);

// The whole of a small file, URL or s3:// object (an index), at most max_bytes. Throws IoError /
// ShardReadError.
std::string read_small_file(const std::string& location, ShardOpener& opener, std::size_t max_bytes);

// A shard's samples, counted by reading its headers (a local file seeks over the data).
std::uint64_t count_samples(const std::string& location, const TarFormat& format, ShardOpener& opener);

}  // namespace conveyor::detail
