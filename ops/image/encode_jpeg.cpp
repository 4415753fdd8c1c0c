#include "conveyor/ops/encode_jpeg.h"

#include <turbojpeg.h>

#include <memory>
#include <string>

#include "conveyor/error.h"

namespace conveyor::ops {
namespace {

int tj_subsampling(ChromaSubsampling subsampling) {
  switch (subsampling) {
    case ChromaSubsampling::s444:
      return TJSAMP_444;
    case ChromaSubsampling::s422:
      return TJSAMP_422;
    case ChromaSubsampling::s420:
      return TJSAMP_420;
    case ChromaSubsampling::s411:
      return TJSAMP_411;
    case ChromaSubsampling::gray:
      return TJSAMP_GRAY;
  }
  return TJSAMP_420;
}

struct TjFree {
  void operator()(unsigned char* buffer) const noexcept { tjFree(buffer); }
};
struct TjDestroy {
  void operator()(void* handle) const noexcept { tjDestroy(handle); }
};

}  // namespace

std::vector<std::uint8_t> encode_jpeg(ConstImageView image, const EncodeOptions& options) {
  if (image.empty()) throw InvalidArgument("encode_jpeg: the image is empty");
  if (image.channels != 1 && image.channels != 3)
    throw InvalidArgument("encode_jpeg: 1 or 3 channels, not " + std::to_string(image.channels));
  if (options.quality < 1 || options.quality > 100)
    throw InvalidArgument("encode_jpeg: quality must be 1-100, got " + std::to_string(options.quality));
  const std::unique_ptr<void, TjDestroy> handle(tjInitCompress());
  if (!handle) throw Error(std::string("encode_jpeg: tjInitCompress: ") + tjGetErrorStr2(nullptr));
  // A gray image is stored gray whatever was asked for: there is no chroma to subsample.
  const int subsampling = image.channels == 1 ? TJSAMP_GRAY : tj_subsampling(options.subsampling);
  const int flags = TJFLAG_ACCURATEDCT | (options.progressive ? TJFLAG_PROGRESSIVE : 0);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int status = tjCompress2(handle.get(), image.data, image.width, static_cast<int>(image.stride),
                                 image.height, image.channels == 1 ? TJPF_GRAY : TJPF_RGB, &out, &size,
                                 subsampling, options.quality, flags);
  const std::unique_ptr<unsigned char, TjFree> owned(out);
  if (status != 0) throw Error(std::string("encode_jpeg: ") + tjGetErrorStr2(handle.get()));
  return {out, out + size};
}

}  // namespace conveyor::ops
