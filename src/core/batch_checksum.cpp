#include "conveyor/batch_checksum.h"

#include <xxhash.h>

#include <cstdio>

namespace conveyor {

struct BatchChecksum::State {
  State() { XXH3_64bits_reset(&xxh); }  // fails only for a null state
  XXH3_state_t xxh;
};

BatchChecksum::BatchChecksum() : state_(std::make_unique<State>()) {}
BatchChecksum::~BatchChecksum() = default;
BatchChecksum::BatchChecksum(BatchChecksum&&) noexcept = default;
BatchChecksum& BatchChecksum::operator=(BatchChecksum&&) noexcept = default;

void BatchChecksum::add(const Batch& batch) {
  add(batch.pixels());
  const std::span<const std::int64_t> labels = batch.labels();
  add({reinterpret_cast<const std::uint8_t*>(labels.data()), labels.size_bytes()});
}

void BatchChecksum::add(std::span<const std::uint8_t> bytes) {
  XXH3_64bits_update(&state_->xxh, bytes.data(), bytes.size());
}

std::uint64_t BatchChecksum::value() const { return XXH3_64bits_digest(&state_->xxh); }

std::string BatchChecksum::hex() const {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value()));
  return text;
}

}  // namespace conveyor
