// A batch as one frame of the data plane, and back: a ServerFrame (its BatchHeader: who the samples are, and
// each tensor's name, type and shape) followed by the tensors' raw bytes. Pixels never become protobuf
// fields.
//
// It names no field kind: a batch's tensors are its pixels, labels and Batch::fields(), each sent by its name,
// and the receiver finds each field tensor in the job's layout (BatchSourceLayout::field_tensors, from the
// job's description) and has the BatchWriter hold it. Hosts are little-endian (x86-64, AArch64): tensors
// travel in memory order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conveyor/batch.h"
#include "conveyor/batch_source.h"
#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;

// What a transport sends for one frame: a head (4-byte little-endian length, then the ServerFrame) and byte
// ranges after it, all in order, and what keeps those ranges' memory alive until the transport is done.
struct Frame {
  std::string head;
  std::vector<std::span<const std::byte>> payload;
  std::shared_ptr<const void> keep_alive;
  bool lent = false;           // its tensors are in shared memory, not in the payload
  std::size_t lent_bytes = 0;  // then: their bytes
  std::size_t bytes() const noexcept;
};

class SharedRegionMemory;
class MappedRegion;

// A batch of split `split`, its `batch_in_split`-th. The payload views the batch's own memory (kept alive by
// the frame): nothing is copied. With `shared`, a batch whose tensors all lie in that region is sent as their
// offsets (BatchHeader::lent, numbered `lent_id`) and no payload; its keep_alive must then be held until the
// trainer releases `lent_id`. `lent` says which way it went.
struct SharedPlacement {
  const SharedRegionMemory& memory;
  std::uint64_t lent_id = 0;
};
Frame encode_batch(const Batch& batch, std::uint64_t split, std::uint64_t batch_in_split,
                   const SharedPlacement* shared = nullptr);
// A frame without payload (SplitEnd, SplitFailed).
Frame encode_frame(const v1::ServerFrame& frame);

// Where a lent batch's tensors are in the region the trainer mapped, in the header's order, to read after its
// head: InvalidArgument when the offsets are not one per tensor or a tensor does not lie in the region.
std::vector<std::span<const std::byte>> lent_tensors(const v1::BatchHeader& header,
                                                     const MappedRegion& region);

// A received frame, read front to back across the slices the transport received it in.
class FrameReader {
 public:
  explicit FrameReader(std::vector<std::span<const std::byte>> slices);
  // The ServerFrame at the front. Throws InvalidArgument when the frame is too short for its length, or the
  // head does not parse.
  v1::ServerFrame head();
  // Copies the next `bytes` bytes to `out`; InvalidArgument when fewer are left.
  void copy_to(void* out, std::size_t bytes);
  std::size_t remaining() const noexcept { return remaining_; }

 private:
  std::vector<std::span<const std::byte>> slices_;
  std::size_t slice_ = 0, offset_ = 0, remaining_ = 0;
};

// The batch a BatchHeader announces, written into `writer` from the bytes after the head. Every tensor's
// name, type and shape is checked against `layout` (the job's) before a byte is copied, the frame must end
// with the last tensor, and every count of a padded tensor must lie within it: a malformed or foreign frame
// is InvalidArgument, never a read or write out of bounds.
Batch decode_batch(const v1::BatchHeader& header, FrameReader& payload, BatchWriter writer,
                   const BatchSourceLayout& layout, std::uint64_t sequence);

}  // namespace conveyor::service::detail
