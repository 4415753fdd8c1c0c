// make_seed_corpus DIR: writes small real JPEGs of every kind the decoder handles into DIR, as the seed
// corpus of the fuzz target: baseline 4:2:0, 4:2:2 and 4:4:4, progressive, grayscale, CMYK (YCCK),
// arithmetic-coded, with restart markers, with an EXIF orientation, and tiny (1x1, 8x8, odd sizes).
// Made at run time rather than committed: the bytes follow from this file, and binaries stay out of git.
//
// The pictures are smooth gradients with a disc and some texture, so every coefficient band has work.
#include <turbojpeg.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "support/libjpeg_encode.h"

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes picture(int height, int width, int channels) {
  Bytes pixels(static_cast<std::size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const bool disc =
          (x - width / 3) * (x - width / 3) + (y - height / 2) * (y - height / 2) < height * width / 10;
      for (int c = 0; c < channels; ++c) {
        double v = 128 + 70 * std::sin(0.11 * x * (c + 1) + 0.07 * y) + 40 * std::cos(0.05 * y * (c + 2));
        if (disc) v = 255 - v;
        v += ((x * 7 + y * 13 + c * 5) % 11) - 5;
        pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(v < 0     ? 0
                                      : v > 255 ? 255
                                                : v);
      }
    }
  }
  return pixels;
}

Bytes tj_encode(int height, int width, int format, int subsampling, int flags, int quality = 85) {
  const std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (!handle) throw std::runtime_error("tjInitCompress failed");
  const Bytes pixels = picture(height, width, tjPixelSize[format]);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int failed = tjCompress2(handle.get(), pixels.data(), width, 0, height, format, &out, &size,
                                 subsampling, quality, flags);
  const std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(out, tjFree);
  if (failed) throw std::runtime_error(std::string("tjCompress2: ") + tjGetErrorStr2(handle.get()));
  return Bytes(out, out + size);
}

// Through the libjpeg API (tests/support/libjpeg_encode.h), for what TurboJPEG does not offer:
// arithmetic coding and restart markers.
Bytes libjpeg_encode(int height, int width, bool arithmetic, int restart_rows) {
  const Bytes pixels = picture(height, width, 3);
  return conveyor::testing::encode_with_libjpeg(pixels.data(), height, width, 3, width * 3, 85,
                                                [&](jpeg_compress_struct& cinfo) {
                                                  cinfo.arith_code = arithmetic ? TRUE : FALSE;
                                                  cinfo.restart_in_rows = restart_rows;
                                                });
}

// An EXIF APP1 segment holding only the orientation tag, inserted after SOI.
Bytes with_orientation(Bytes jpeg, std::uint8_t orientation) {
  const std::uint8_t app1[] = {
      0xFF,        0xE1, 0x00, 0x22, 'E',  'x', 'i', 'f', 0, 0,  // marker, length 34, "Exif\0\0"
      'I',         'I',  0x2A, 0x00, 0x08, 0,   0,   0,          // TIFF header, IFD at 8
      0x01,        0x00,                                         // one entry
      0x12,        0x01, 0x03, 0x00, 0x01, 0,   0,   0,          // Orientation, SHORT, 1 value
      orientation, 0,    0,    0,                                // the value
      0,           0,    0,    0};                               // no next IFD
  jpeg.insert(jpeg.begin() + 2, std::begin(app1), std::end(app1));
  return jpeg;
}

void write(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) try {
  std::filesystem::path dir;
  CLI::App app(
      "make_seed_corpus: writes small real JPEGs of every kind the decoder handles into DIR, the seed\n"
      "corpus of fuzz_decode (baseline 4:2:0/4:2:2/4:4:4/4:4:0, progressive, gray, CMYK, arithmetic,\n"
      "restart markers, EXIF orientation, tiny and odd sizes).");
  app.add_option("dir", dir, "output folder, made if missing (required)");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (dir.empty()) throw CLI::RequiredError("dir");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  std::filesystem::create_directories(dir);
  const int accurate = TJFLAG_ACCURATEDCT;
  write(dir / "baseline_420.jpg", tj_encode(48, 64, TJPF_RGB, TJSAMP_420, accurate));
  write(dir / "baseline_422.jpg", tj_encode(40, 56, TJPF_RGB, TJSAMP_422, accurate));
  write(dir / "baseline_444.jpg", tj_encode(33, 47, TJPF_RGB, TJSAMP_444, accurate));
  write(dir / "baseline_440.jpg", tj_encode(32, 40, TJPF_RGB, TJSAMP_440, accurate));
  write(dir / "progressive.jpg", tj_encode(48, 64, TJPF_RGB, TJSAMP_420, accurate | TJFLAG_PROGRESSIVE));
  write(dir / "progressive_gray.jpg", tj_encode(40, 40, TJPF_GRAY, TJSAMP_GRAY, TJFLAG_PROGRESSIVE));
  write(dir / "gray.jpg", tj_encode(40, 56, TJPF_GRAY, TJSAMP_GRAY, accurate));
  write(dir / "cmyk.jpg", tj_encode(40, 48, TJPF_CMYK, TJSAMP_420, accurate));
  write(dir / "arithmetic.jpg", libjpeg_encode(40, 48, true, 0));
  write(dir / "restart_markers.jpg", libjpeg_encode(48, 64, false, 1));
  write(dir / "exif_rotated.jpg", with_orientation(tj_encode(24, 40, TJPF_RGB, TJSAMP_420, accurate), 6));
  write(dir / "tiny_1x1.jpg", tj_encode(1, 1, TJPF_RGB, TJSAMP_420, accurate));
  write(dir / "tiny_8x8_gray.jpg", tj_encode(8, 8, TJPF_GRAY, TJSAMP_GRAY, accurate));
  write(dir / "odd_17x3.jpg", tj_encode(17, 3, TJPF_RGB, TJSAMP_420, accurate, 50));
  write(dir / "wide_8x200.jpg", tj_encode(8, 200, TJPF_RGB, TJSAMP_420, accurate, 40));
  std::printf("make_seed_corpus: 15 JPEGs in %s\n", dir.c_str());
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "make_seed_corpus: %s\n", error.what());
  return 1;
}
