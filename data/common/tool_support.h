// Small pieces the data tools share: whole-file reads and writes, and RAII TurboJPEG handles.
#pragma once

#include <turbojpeg.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace conveyor::data {

// The whole file; throws std::runtime_error naming the file.
std::vector<std::uint8_t> read_file(const std::filesystem::path& path);
// Creates or replaces the file with `bytes`; throws std::runtime_error naming the file.
void write_file(const std::filesystem::path& path, std::span<const std::uint8_t> bytes);

// One TurboJPEG handle (compressor or decompressor), freed with it.
class TurboJpeg {
 public:
  enum class Kind { compress, decompress };
  explicit TurboJpeg(Kind kind) : handle_(kind == Kind::compress ? tjInitCompress() : tjInitDecompress()) {
    if (handle_ == nullptr)
      throw std::runtime_error(std::string("TurboJPEG init failed: ") + tjGetErrorStr2(nullptr));
  }
  ~TurboJpeg() { tjDestroy(handle_); }
  TurboJpeg(const TurboJpeg&) = delete;
  TurboJpeg& operator=(const TurboJpeg&) = delete;
  tjhandle get() const noexcept { return handle_; }
  std::string error() const { return tjGetErrorStr2(handle_); }

 private:
  tjhandle handle_;
};

// Encodes into a buffer it keeps, so one encoder per thread stops allocating after its first image.
class JpegEncoder {
 public:
  JpegEncoder() : handle_(TurboJpeg::Kind::compress) {}
  // pixels: height x width x (1 for TJPF_GRAY, 3 for TJPF_RGB), rows contiguous. Returns a view of the
  // encoded bytes, valid until the next call.
  std::span<const std::uint8_t> encode(const std::uint8_t* pixels, int width, int height, int pixel_format,
                                       int subsampling, int quality);

 private:
  TurboJpeg handle_;
  std::vector<unsigned char> buffer_;
};

}  // namespace conveyor::data
