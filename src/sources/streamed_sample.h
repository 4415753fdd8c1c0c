// A sample read ahead from a stream (a tar shard): its bytes, label and name, or why it could not be read.
// Samples circulate through a pool: the source stage swaps the bytes into the pipeline's element and gives
// the sample back holding the element's old buffer, so a warm pipeline reuses byte buffers instead of
// allocating one per sample.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace conveyor::detail {

struct StreamedSample {
  std::vector<std::uint8_t> bytes;        // the image member
  std::vector<std::uint8_t> mask_bytes;   // the mask member (TarFormat::mask_extension), or empty
  std::vector<std::uint8_t> fields_json;  // the boxes member (TarFormat::fields_extension), or empty
  std::int64_t label = -1;
  std::string path;  // "<shard>#<member>": the shard's path or URL and the image member's name
  // Set when the sample cannot be used: the element then fails in the "read" stage with this kind
  // ("no_label", "truncated", ...) and reason (which names the shard, the member and the byte offset).
  std::string error_kind;
  std::string error_reason;

  void clear_error() {
    error_kind.clear();
    error_reason.clear();
  }
};

class StreamedSamplePool;

// Gives a sample back to its pool.
struct ReturnToPool {
  StreamedSamplePool* pool = nullptr;
  void operator()(StreamedSample* sample) const noexcept;
};

using StreamedSamplePtr = std::unique_ptr<StreamedSample, ReturnToPool>;

// Thread-safe: the shard readers take samples, the source stage gives them back. Must outlive every
// sample it lent.
class StreamedSamplePool {
 public:
  StreamedSamplePool() = default;
  StreamedSamplePool(const StreamedSamplePool&) = delete;
  StreamedSamplePool& operator=(const StreamedSamplePool&) = delete;

  // A sample with no error; its bytes keep the capacity of an earlier use.
  StreamedSamplePtr acquire();
  // A deep copy of `sample` (for the rare repeat that evens out the ranks).
  StreamedSamplePtr copy(const StreamedSample& sample);

 private:
  friend struct ReturnToPool;
  void give_back(StreamedSample* sample) noexcept;

  std::mutex mutex_;
  std::vector<std::unique_ptr<StreamedSample>> free_;
};

}  // namespace conveyor::detail
