// Where an iterator stands, to start another one there: after a crash, on another machine, at another
// thread count, or (elastic) at another shard count.
//
//   conveyor::BatchIterator it = train.begin();
//   ... it.next() ...
//   it.state().save("run/iterator.json");                       // written atomically
//   ... later, in a new process:
//   conveyor::BatchIterator resumed = train.begin(conveyor::IteratorState::load("run/iterator.json"));
//
// A state is a few numbers per ordering method of the chain (O(1) in the dataset's size): the epoch and
// position of each shuffle, repeat, skip and take, and the last element the shard delivered. Every element's
// pixels depend only on its seed, sample_seed(pipeline seed, epoch, index), so a resumed iterator delivers
// exactly the batches an uninterrupted one would have delivered next, bit for bit, at any thread count.
// Restoring costs O(1) with the whole-epoch shuffle (Dataset::shuffle()): no element is read or decoded
// again. A buffered shuffle (shuffle(buffer_size)) restores by replaying its draws since the epoch began
// (index arithmetic only, no reading or decoding; measured in bench/pipeline/restore_bench.cpp).
//
// Elastic: the states of all N shards of a run (Dataset::shard(N, i)), saved at the same step, combine()
// into one state from which shard(M, j) iterators, j = 0..M-1, deliver the rest of the epoch exactly once
// across the M shards, each element with its own seed (so with the same pixels), then the following epochs
// split M ways.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace conveyor {

namespace detail {
struct IteratorStateData;
class Pipeline;
class SourcedBatches;
}  // namespace detail

class IteratorState {
 public:
  // The state of an iterator that has delivered nothing (begin(IteratorState{}) == begin()).
  IteratorState();
  // True for that default state (it has nothing to save); a state an iterator gives is never empty.
  bool empty() const noexcept { return data_ == nullptr; }

  // Batches (samples, for a sample iterator) and elements delivered up to this state, counting those before
  // any earlier restore; a resumed batch iterator numbers its batches (Batch::sequence) from batches().
  std::uint64_t batches() const noexcept;
  std::uint64_t elements() const noexcept;
  // Epoch of the last element delivered (0 before any).
  std::uint64_t epoch() const noexcept;
  // The shard this state belongs to ("shard i of N"): index and count; 0 and 1 without shard().
  std::uint64_t shard_index() const noexcept;
  std::uint64_t shard_count() const noexcept;

  // JSON text, with a checksum (XXH64) over its content; from_json refuses text that is not a state,
  // truncated, changed after writing (checksum), or of another format version, saying which. `origin` (a
  // file name, say) starts the message.
  std::string to_json() const;
  static IteratorState from_json(std::string_view text, std::string_view origin = "iterator state");
  // Writes to_json() to `file` atomically (a temporary file beside it, fsync, rename, fsync of the folder):
  // a crash leaves the previous file or the new one, never a mix. Throws IoError naming the file.
  void save(const std::filesystem::path& file) const;
  // Reads a state; IoError when the file cannot be read, InvalidArgument (naming the file) when it is not
  // a valid state.
  static IteratorState load(const std::filesystem::path& file);

  // The states of all N shards of one run (shard(N, 0) .. shard(N, N - 1) of the same dataset, in any
  // order) as one state that shard(M, j) iterators of that dataset, for any M, start from. Throws
  // InvalidArgument when a shard is missing or repeated or the states belong to different datasets.
  static IteratorState combine(std::span<const IteratorState> shards);

 private:
  friend class detail::Pipeline;
  friend class detail::SourcedBatches;
  explicit IteratorState(std::shared_ptr<const detail::IteratorStateData> data) : data_(std::move(data)) {}
  std::shared_ptr<const detail::IteratorStateData> data_;  // null: the start
};

}  // namespace conveyor
