// The safetensors file format (https://github.com/huggingface/safetensors, its README's "Format"): an
// unsigned 64-bit little-endian header size N, then N bytes of UTF-8 JSON, then the tensors' bytes. The
// JSON maps each tensor's name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the bytes
// after the header, which the tensors cover without gaps or overlaps) and may hold "__metadata__", a map
// of strings. PyTorch reads it with safetensors.torch.load_file. Written here (a page of code) because no
// Debian package offers a C++ implementation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "conveyor/atomic_file.h"

namespace conveyor::train {

// One tensor to write: little-endian bytes in row-major order of `shape`.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "I64", ... (the format's names)
  std::vector<std::int64_t> shape;
  std::span<const std::uint8_t> bytes;
};

// Writes the header (padded with spaces to a multiple of 8 bytes, so the tensors stay aligned) and the
// tensors, in the order given, into `out`. Throws InvalidArgument when a tensor's bytes do not match its
// dtype and shape.
void write_safetensors(AtomicFile& out, std::span<const SafetensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata);

// A safetensors file read whole and checked: the header size fits the file, the JSON parses, every tensor
// has a known dtype and offsets that match its shape, and the tensors cover the data exactly. Errors are
// InvalidArgument naming the file and the problem (IoError when it cannot be read).
class SafetensorsFile {
 public:
  struct Tensor {
    std::string dtype;
    std::vector<std::int64_t> shape;
    std::span<const std::uint8_t> bytes;
  };

  static SafetensorsFile read(const std::filesystem::path& path);

  // The tensor named `name`; InvalidArgument naming the file when it is missing.
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  const std::map<std::string, Tensor>& tensors() const noexcept { return tensors_; }
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

 private:
  std::filesystem::path path_;
  std::vector<std::uint8_t> contents_;
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// Bytes of one element of a dtype ("F32": 4); 0 when the format does not know it.
std::size_t safetensors_dtype_size(const std::string& dtype) noexcept;

}  // namespace conveyor::train
