// conveyor's exceptions: every error that crosses the API edge says where it happened and why.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace conveyor {

// Base class of every exception conveyor throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Why an encoded image could not be turned into pixels.
enum class DecodeFailure : std::uint8_t {
  empty,        // zero bytes
  not_jpeg,     // neither a JPEG SOI marker nor a PNG signature (GIF, WebP, random bytes, ...)
  truncated,    // the data ends before the image does
  corrupt,      // the decoder (libjpeg, libspng) rejected the stream
  unsupported,  // valid but not decodable here (12-bit JPEG, ...), or a colour PNG given as a mask
  too_large,    // declared size is over the pixel limit
  warnings,     // decodable, but libjpeg warned and warnings were asked to be errors
  not_png,      // a mask that is not a PNG (masks are PNGs of class ids)
};

// Short, stable name of a DecodeFailure ("truncated", "too_large", ...).
const char* to_string(DecodeFailure failure) noexcept;

// A JPEG or PNG (or anything handed to a decoder) could not be decoded.
class DecodeError : public Error {
 public:
  DecodeError(DecodeFailure failure, const std::string& detail);
  DecodeFailure failure() const noexcept { return failure_; }

 private:
  DecodeFailure failure_;
};

// A file could not be listed or read.
class IoError : public Error {
 public:
  using Error::Error;
};

// An argument or configuration is invalid (negative size, empty range, shard index out of range, ...).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A sample failed inside the pipeline: carries the file, the stage and the original reason.
// A sample (or one of its fields) that does not fit its batch's shape: its own kind of skip
// ("shape_mismatch" in PipelineStats).
class ShapeMismatch : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

class PipelineError : public Error {
 public:
  PipelineError(std::string path, std::string stage, std::string reason);
  const std::string& path() const noexcept { return path_; }
  const std::string& stage() const noexcept { return stage_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string path_, stage_, reason_;
};

// A CUDA, cuDNN or cuBLAS call failed; the message names the call and the layer or component.
class DeviceError : public Error {
 public:
  using Error::Error;
};

// A device allocation would exceed the configured memory limit or the memory left on the card.
class DeviceMemoryError : public DeviceError {
 public:
  DeviceMemoryError(const std::string& what_for, std::size_t requested, std::size_t available,
                    std::size_t limit);
  std::size_t requested() const noexcept { return requested_; }
  std::size_t available() const noexcept { return available_; }

 private:
  std::size_t requested_, available_;
};

}  // namespace conveyor
