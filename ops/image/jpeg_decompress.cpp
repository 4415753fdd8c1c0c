#include "ops/image/jpeg_decompress.h"

#include <jerror.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ops/image/exif_orientation.h"

namespace conveyor::ops::detail {
namespace {

// A progressive JPEG can hold any number of scans, and a crafted one makes libjpeg run for minutes; real
// encoders write about 10. (libjpeg-turbo 3 offers the same guard as TJPARAM_SCANLIMIT.)
constexpr int kMaxScans = 500;

// Coefficient memory of a progressive image is at most 2 bytes per coefficient, 4 components at full
// resolution: 8 bytes a pixel. Capping libjpeg there (plus room for row buffers) keeps a lying header
// from making it allocate more than max_pixels allows.
constexpr std::size_t kBytesPerPixelBound = 8;
constexpr std::size_t kMemorySlack = std::size_t{64} << 20;

DecodeFailure failure_of(int code) noexcept {
  switch (code) {
    case JERR_NO_SOI:
      return DecodeFailure::not_jpeg;
    case JERR_INPUT_EMPTY:
    case JERR_INPUT_EOF:
      return DecodeFailure::truncated;
    case JERR_BAD_PRECISION:  // 12-bit (and 16-bit) samples: this build handles 8-bit only
    case JERR_ARITH_NOTIMPL:
    case JERR_NOT_COMPILED:
    case JERR_NOTIMPL:
    case JERR_SOF_UNSUPPORTED:  // lossless and hierarchical processes
    case JERR_CONVERSION_NOTIMPL:
    case JERR_CCIR601_NOTIMPL:
      return DecodeFailure::unsupported;
    case JERR_IMAGE_TOO_BIG:
    case JERR_WIDTH_OVERFLOW:
    case JERR_OUT_OF_MEMORY:
    case JERR_NO_BACKING_STORE:  // over max_memory_to_use
      return DecodeFailure::too_large;
    default:
      return DecodeFailure::corrupt;
  }
}

JpegColorSpace color_space_of(J_COLOR_SPACE space) noexcept {
  switch (space) {
    case JCS_GRAYSCALE:
      return JpegColorSpace::gray;
    case JCS_YCbCr:
      return JpegColorSpace::ycbcr;
    case JCS_RGB:
      return JpegColorSpace::rgb;
    case JCS_CMYK:
      return JpegColorSpace::cmyk;
    case JCS_YCCK:
      return JpegColorSpace::ycck;
    default:
      return JpegColorSpace::unknown;
  }
}

JpegDecompress& self_of(j_common_ptr common) noexcept {
  return *static_cast<JpegDecompress*>(common->client_data);
}

}  // namespace

JpegDecompress::JpegDecompress() noexcept = default;

JpegDecompress::~JpegDecompress() { close(); }

void JpegDecompress::close() noexcept {
  if (created_) jpeg_destroy_decompress(&cinfo_);
  created_ = false;
}

template <class Call>
void JpegDecompress::guarded(Call&& call) {
  // Nothing between here and the libjpeg call inside `call` has a destructor (see the class comment).
  if (setjmp(jump_buffer_) != 0) throw_failure();
  call();
}

void JpegDecompress::jump(DecodeFailure failure) {
  failure_ = failure;
  std::longjmp(jump_buffer_, 1);
}

void JpegDecompress::throw_failure() const { throw DecodeError(failure_, message_); }

void JpegDecompress::on_error_exit(j_common_ptr common) {
  JpegDecompress& self = self_of(common);
  (*common->err->format_message)(common, self.message_);
  // Once the data has run out, whatever libjpeg trips over next is a consequence of the truncation.
  self.jump(self.eof_seen_ ? DecodeFailure::truncated : failure_of(common->err->msg_code));
}

void JpegDecompress::on_emit_message(j_common_ptr common, int level) {
  if (level >= 0) return;  // trace messages
  JpegDecompress& self = self_of(common);
  const int code = common->err->msg_code;
  ++self.warnings_;
  (*common->err->format_message)(common, self.message_);
  if (code == JWRN_JPEG_EOF) {
    // jpeg_mem_src inserts a fake end-of-image marker and libjpeg would go on filling the rest of the
    // image with gray. Data that ends inside a scan before its last iMCU row is a truncated file; data
    // that ends after the last row only lacks its EOI marker, which many real files do.
    self.eof_seen_ = true;
    if (self.cinfo_.input_iMCU_row + 1 < self.cinfo_.total_iMCU_rows) self.jump(DecodeFailure::truncated);
  } else if (code == JWRN_HIT_MARKER && self.eof_seen_) {
    // The entropy decoder needed bits past the end of the data: the last row is incomplete.
    self.jump(DecodeFailure::truncated);
  }
  if (self.warnings_are_errors_)
    self.jump(self.eof_seen_ ? DecodeFailure::truncated : DecodeFailure::warnings);
}

void JpegDecompress::on_progress(j_common_ptr common) {
  JpegDecompress& self = self_of(common);
  if (self.cinfo_.input_scan_number > kMaxScans) {
    std::snprintf(self.message_, sizeof self.message_, "more than %d scans", kMaxScans);
    self.jump(DecodeFailure::corrupt);
  }
}

void JpegDecompress::open(std::span<const std::uint8_t> jpeg, const DecodeOptions& options,
                          bool read_orientation) {
  close();
  warnings_ = 0;
  eof_seen_ = false;
  warnings_are_errors_ = options.warnings_are_errors;
  message_[0] = '\0';
  header_ = {};
  adobe_marker_ = false;
  if (jpeg.empty()) throw DecodeError(DecodeFailure::empty, "no bytes");
  if (jpeg.size() < 2 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) {
    char start[64];
    std::snprintf(start, sizeof start, "no JPEG SOI marker (starts with 0x%02x 0x%02x)", jpeg[0],
                  jpeg.size() > 1 ? jpeg[1] : 0);
    throw DecodeError(DecodeFailure::not_jpeg, start);
  }

  std::memset(&cinfo_, 0, sizeof cinfo_);
  cinfo_.err = jpeg_std_error(&errors_);
  errors_.error_exit = on_error_exit;
  errors_.emit_message = on_emit_message;
  errors_.output_message = on_output_message;
  cinfo_.client_data = this;
  progress_.progress_monitor = on_progress;
  created_ = true;  // jpeg_destroy_decompress is safe on a zeroed or half-made object
  guarded([&] { jpeg_create_decompress(&cinfo_); });
  cinfo_.progress = &progress_;
  const std::size_t max_memory = options.max_pixels * kBytesPerPixelBound + kMemorySlack;
  cinfo_.mem->max_memory_to_use = static_cast<long>(std::min<std::size_t>(max_memory, 0x7fffffffffffffff));

  guarded([&] {
    jpeg_mem_src(&cinfo_, jpeg.data(), static_cast<unsigned long>(jpeg.size()));
    if (read_orientation) jpeg_save_markers(&cinfo_, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&cinfo_, TRUE);
  });

  header_.width = static_cast<int>(cinfo_.image_width);
  header_.height = static_cast<int>(cinfo_.image_height);
  header_.components = cinfo_.num_components;
  header_.color_space = color_space_of(cinfo_.jpeg_color_space);
  header_.progressive = cinfo_.progressive_mode != 0;
  header_.arithmetic = cinfo_.arith_code != 0;
  adobe_marker_ = cinfo_.saw_Adobe_marker != 0;
  if (read_orientation) {
    for (jpeg_saved_marker_ptr marker = cinfo_.marker_list; marker; marker = marker->next) {
      if (marker->marker != JPEG_APP0 + 1) continue;
      const int orientation = exif_orientation({marker->data, marker->data_length});
      if (orientation != 0) {
        header_.orientation = orientation;
        break;
      }
    }
  }
  const auto pixels = static_cast<std::uint64_t>(header_.width) * static_cast<std::uint64_t>(header_.height);
  if (pixels > options.max_pixels) {
    throw DecodeError(DecodeFailure::too_large,
                      std::to_string(header_.width) + "x" + std::to_string(header_.height) +
                          " is over the limit of " + std::to_string(options.max_pixels) + " pixels");
  }
}

std::size_t JpegDecompress::coefficient_bytes() noexcept {
  // After jpeg_read_header the state is DSTATE_READY, in which jpeg_has_multiple_scans cannot fail.
  if (!created_ || cinfo_.global_state == 0 || !jpeg_has_multiple_scans(&cinfo_)) return 0;
  std::size_t total = 0;
  for (int c = 0; c < cinfo_.num_components; ++c) {
    const jpeg_component_info& component = cinfo_.comp_info[c];
    // libjpeg's coefficient controller rounds each component's blocks up to whole iMCUs.
    const auto round_up = [](std::size_t n, std::size_t m) { return m ? (n + m - 1) / m * m : n; };
    total += round_up(component.width_in_blocks, static_cast<std::size_t>(component.h_samp_factor)) *
             round_up(component.height_in_blocks, static_cast<std::size_t>(component.v_samp_factor)) *
             DCTSIZE2 * sizeof(JCOEF);
  }
  return total;
}

void JpegDecompress::start(int scale_denom, J_COLOR_SPACE space, bool fast) {
  cinfo_.out_color_space = space;
  cinfo_.scale_num = 1;
  cinfo_.scale_denom = static_cast<unsigned>(scale_denom);
  cinfo_.dct_method = fast ? JDCT_IFAST : JDCT_ISLOW;
  cinfo_.do_fancy_upsampling = fast ? FALSE : TRUE;
  // Block smoothing only ever applies to a progressive file that lacks refinement scans, and libjpeg-turbo
  // 2.1 smooths a cropped or skipped-into window with other neighbours than the whole image: off, so a
  // window stays exactly the crop of the whole decode (found by fuzzing, fuzz/regressions/).
  cinfo_.do_block_smoothing = FALSE;
  guarded([&] { jpeg_start_decompress(&cinfo_); });
  // A progressive image is read whole by jpeg_start_decompress. If the data ran out between two scans,
  // some coefficients never got their last refinement: the image would come out blurred or gray.
  if (eof_seen_ && cinfo_.progressive_mode && cinfo_.coef_bits != nullptr) {
    for (int c = 0; c < cinfo_.num_components; ++c) {
      for (int k = 0; k < DCTSIZE2; ++k) {
        if (cinfo_.coef_bits[c][k] != 0) {
          throw DecodeError(DecodeFailure::truncated, "premature end of data between progressive scans");
        }
      }
    }
  }
}

int JpegDecompress::crop_columns(int x, int width) {
  auto offset = static_cast<JDIMENSION>(x);
  auto columns = static_cast<JDIMENSION>(width);
  guarded([&] { jpeg_crop_scanline(&cinfo_, &offset, &columns); });
  return static_cast<int>(offset);
}

void JpegDecompress::skip_rows(int count) {
  guarded([&] { jpeg_skip_scanlines(&cinfo_, static_cast<JDIMENSION>(count)); });
}

void JpegDecompress::read_rows(std::uint8_t* first, std::ptrdiff_t stride, int count) {
  bool stalled = false;
  guarded([&] {
    constexpr int kBatch = 16;
    JSAMPROW rows[kBatch];
    for (int done = 0; done < count;) {
      const int batch = std::min(kBatch, count - done);
      for (int i = 0; i < batch; ++i) rows[i] = first + static_cast<std::ptrdiff_t>(done + i) * stride;
      const auto got = static_cast<int>(jpeg_read_scanlines(&cinfo_, rows, static_cast<JDIMENSION>(batch)));
      if (got <= 0) {
        stalled = true;
        return;
      }
      done += got;
    }
  });
  if (stalled)
    throw DecodeError(DecodeFailure::corrupt, "libjpeg delivered fewer rows than the header declares");
}

}  // namespace conveyor::ops::detail
