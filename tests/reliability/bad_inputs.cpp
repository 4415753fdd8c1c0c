#include "bad_inputs.h"

#include <string_view>

#include "conveyor/ops/sample_ops.h"
#include "conveyor/random.h"
#include "support/test_images.h"

namespace conveyor::testing {

using namespace std::string_view_literals;

namespace {

Bytes random_bytes(std::size_t count, std::uint64_t seed) {
  Rng rng(seed);
  Bytes bytes(count);
  for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng.next());
  bytes[0] = 0x00;  // never an accidental SOI marker
  return bytes;
}

// A format's signature followed by some payload: what a PNG, GIF or WebP renamed to .jpg starts with.
Bytes signature_then_payload(std::string_view signature, std::uint64_t seed) {
  Bytes bytes(signature.begin(), signature.end());
  const Bytes payload = random_bytes(200, seed);
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  return bytes;
}

Bytes concatenated(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

FileCase good(std::string name, Bytes bytes) { return {std::move(name), std::move(bytes), "", "", true}; }

FileCase bad(std::string name, Bytes bytes, std::string kind, bool fails_every_window = true) {
  return {std::move(name), std::move(bytes), "decode", std::move(kind), fails_every_window};
}

}  // namespace

std::vector<FileCase> file_cases() {
  const Bytes baseline = make_jpeg(48, 64, 3, 7);
  const Bytes progressive = make_jpeg(48, 64, 3, 8, 90, true);
  const std::size_t scan = scan_data_offset(baseline);
  const std::size_t eoi = end_of_image_offset(baseline);

  std::vector<FileCase> cases;
  // Images that must come through, whatever their coding.
  cases.push_back(good("baseline_420", baseline));
  cases.push_back(good("progressive", progressive));
  cases.push_back(good("grayscale", make_jpeg(40, 56, 1, 9)));
  cases.push_back(good("subsampling_444", make_444_jpeg(33, 47, 10)));
  cases.push_back(good("cmyk", make_cmyk_jpeg(40, 48, 11)));
  // libjpeg-turbo 2.1 decodes arithmetic coding (WITH_ARITH_DEC is on in Debian's build).
  cases.push_back(good("arithmetic", make_arithmetic_jpeg(40, 48, 12)));
  cases.push_back(good("one_pixel", make_jpeg(1, 1, 3, 13)));
  cases.push_back(good("one_pixel_gray", make_jpeg(1, 1, 1, 14)));
  cases.push_back(good("odd_size", make_jpeg(17, 31, 3, 15)));
  // Many real files lack the end-of-image marker; libjpeg warns, the pixels are all there.
  cases.push_back(good("missing_end_of_image", first_bytes(baseline, eoi)));
  cases.push_back(good("trailing_bytes", concatenated(baseline, random_bytes(100, 16))));

  // Not JPEG at all.
  cases.push_back(bad("zero_bytes", {}, "empty"));
  cases.push_back(bad("random_bytes", random_bytes(4096, 17), "not_jpeg"));
  // A PNG signature goes to the PNG decoder (images may be PNGs, issue 35): random bytes after it are a
  // corrupt PNG.
  cases.push_back(
      bad("png_signature", signature_then_payload("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR"sv, 18), "corrupt"));
  cases.push_back(bad("gif_signature", signature_then_payload("GIF89a\x10\0\x10\0"sv, 19), "not_jpeg"));
  cases.push_back(bad("webp_signature", signature_then_payload("RIFF\xd0\0\0\0WEBPVP8 "sv, 20), "not_jpeg"));
  // Cut at several points.
  cases.push_back(bad("soi_only", first_bytes(baseline, 2), "truncated"));
  cases.push_back(bad("truncated_mid_header", first_bytes(baseline, 30), "truncated"));
  cases.push_back(bad("truncated_before_scan", first_bytes(baseline, scan - 3), "truncated"));
  cases.push_back(bad("truncated_at_scan_start", first_bytes(baseline, scan + 8), "truncated"));
  cases.push_back(bad("truncated_mid_scan", first_bytes(baseline, (scan + eoi) / 2), "truncated", false));
  cases.push_back(bad("truncated_before_end_of_image", first_bytes(baseline, eoi - 16), "truncated", false));
  cases.push_back(
      bad("progressive_truncated", first_bytes(progressive, progressive.size() / 2), "truncated"));
  // Headers that cannot be decoded.
  cases.push_back(bad("soi_eoi_only", {0xFF, 0xD8, 0xFF, 0xD9}, "corrupt"));
  cases.push_back(bad("declared_zero_width", with_declared_size(baseline, 0, 48), "corrupt"));
  cases.push_back(bad("twelve_bit", with_precision(baseline, 12), "unsupported"));
  // Too many pixels: a real one over the limit, and a tiny file whose header claims 65,500 x 65,500.
  cases.push_back(bad("over_pixel_limit", make_jpeg(64, 80, 3, 21), "too_large"));
  cases.push_back(bad("declares_65500x65500", with_declared_size(baseline, 65'500, 65'500), "too_large"));
  return cases;
}

std::vector<FileCase> good_cases() {
  std::vector<FileCase> cases;
  for (FileCase& c : file_cases())
    if (c.good()) cases.push_back(std::move(c));
  return cases;
}

std::vector<FileCase> bad_cases() {
  std::vector<FileCase> cases;
  for (FileCase& c : file_cases())
    if (!c.good()) cases.push_back(std::move(c));
  return cases;
}

std::vector<SampleOp> decode_chain() {
  ops::DecodeOptions decode;
  decode.max_pixels = kPixelLimit;
  return {ops::decode(decode), ops::resize(kOutputShape.height, kOutputShape.width),
          ops::flip_horizontal(0.5),
          ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1})};
}

std::vector<SampleOp> crop_chain() {
  ops::RandomResizedCropOptions crop;
  crop.decode.max_pixels = kPixelLimit;
  return {ops::decode_random_resized_crop(kOutputShape.height, crop), ops::flip_horizontal(0.5),
          ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4, .hue = 0.1})};
}

Dataset with_ops(Dataset dataset, const std::vector<SampleOp>& ops) {
  for (const SampleOp& op : ops) dataset = dataset.map(op);
  return dataset;
}

}  // namespace conveyor::testing
