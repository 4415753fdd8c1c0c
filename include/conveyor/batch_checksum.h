// A checksum over a stream of batches, to check that two runs delivered the same bytes (at different
// thread counts, prefetch depths or shard counts, say) without keeping the bytes of either.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "conveyor/batch.h"

namespace conveyor {

// XXH3 (64 bits) over every added batch's pixels and then its labels, in the order they are added: the
// same batches in the same order give the same value on any machine of the same byte order.
class BatchChecksum {
 public:
  BatchChecksum();
  ~BatchChecksum();
  BatchChecksum(BatchChecksum&&) noexcept;
  BatchChecksum& operator=(BatchChecksum&&) noexcept;
  BatchChecksum(const BatchChecksum&) = delete;
  BatchChecksum& operator=(const BatchChecksum&) = delete;

  // Adds the batch's size() samples: their pixels, then their labels.
  void add(const Batch& batch);
  // Adds raw bytes (for batches a program holds in its own buffers).
  void add(std::span<const std::uint8_t> bytes);

  // The checksum of everything added so far; adding more afterwards is allowed.
  std::uint64_t value() const;
  // value() as "0x" and 16 hexadecimal digits, the form the benchmarks print and write.
  std::string hex() const;

 private:
  struct State;  // xxHash's streaming state, kept out of this header
  std::unique_ptr<State> state_;
};

}  // namespace conveyor
