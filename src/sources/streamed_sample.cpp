#include "src/sources/streamed_sample.h"

namespace conveyor::detail {

void ReturnToPool::operator()(StreamedSample* sample) const noexcept {
  if (pool != nullptr) {
    pool->give_back(sample);
  } else {
    std::unique_ptr<StreamedSample> owned(sample);  // not from a pool: freed
  }
}

StreamedSamplePtr StreamedSamplePool::acquire() {
  std::unique_ptr<StreamedSample> sample;
  {
    std::lock_guard lock(mutex_);
    if (!free_.empty()) {
      sample = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!sample) sample = std::make_unique<StreamedSample>();
  sample->clear_error();
  sample->label = -1;
  return StreamedSamplePtr(sample.release(), ReturnToPool{this});
}

StreamedSamplePtr StreamedSamplePool::copy(const StreamedSample& sample) {
  StreamedSamplePtr out = acquire();
  out->bytes = sample.bytes;
  out->mask_bytes = sample.mask_bytes;
  out->fields_json = sample.fields_json;
  out->label = sample.label;
  out->path = sample.path;
  out->error_kind = sample.error_kind;
  out->error_reason = sample.error_reason;
  return out;
}

void StreamedSamplePool::give_back(StreamedSample* sample) noexcept {
  std::unique_ptr<StreamedSample> owned(sample);
  try {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(owned));
  } catch (...) {
    // Out of memory growing the free list: the sample is simply freed.
  }
}

}  // namespace conveyor::detail
