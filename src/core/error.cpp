#include "conveyor/error.h"

namespace conveyor {

const char* to_string(DecodeFailure failure) noexcept {
  switch (failure) {
    case DecodeFailure::empty: return "empty";
    case DecodeFailure::not_jpeg: return "not_jpeg";
    case DecodeFailure::truncated: return "truncated";
    case DecodeFailure::corrupt: return "corrupt";
    case DecodeFailure::unsupported: return "unsupported";
    case DecodeFailure::too_large: return "too_large";
    case DecodeFailure::warnings: return "warnings";
    case DecodeFailure::not_png:
      return "not_png";
  }
  return "unknown";
}

DecodeError::DecodeError(DecodeFailure failure, const std::string& detail)
    : Error(std::string("decode failed (") + to_string(failure) + "): " + detail), failure_(failure) {}

PipelineError::PipelineError(std::string path, std::string stage, std::string reason)
    : Error("stage '" + stage + "' failed on '" + path + "': " + reason),
      path_(std::move(path)),
      stage_(std::move(stage)),
      reason_(std::move(reason)) {}

DeviceMemoryError::DeviceMemoryError(const std::string& what_for, std::size_t requested,
                                     std::size_t available, std::size_t limit)
    : DeviceError("device memory: " + what_for + " asked for " + std::to_string(requested) +
                  " bytes but only " + std::to_string(available) + " are left" +
                  (limit ? " under the limit of " + std::to_string(limit) + " bytes" : std::string())),
      requested_(requested),
      available_(available) {}

}  // namespace conveyor
