#include "data/imagenet_like/source_photos.h"

#include <oneapi/tbb/parallel_for.h>
#include <xxhash.h>

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include "data/common/tool_support.h"

namespace conveyor::data {
namespace {

namespace fs = std::filesystem;

bool is_jpeg_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg";
}

struct Header {
  int width = 0, height = 0, colorspace = 0;
};

std::optional<Header> read_header(const TurboJpeg& decoder, const std::vector<std::uint8_t>& bytes) {
  Header header;
  int subsampling = 0;
  if (tjDecompressHeader3(decoder.get(), bytes.data(), bytes.size(), &header.width, &header.height,
                          &subsampling, &header.colorspace) != 0)
    return std::nullopt;
  return header;
}

}  // namespace

std::vector<SourcePhoto> find_source_photos(const std::vector<fs::path>& folders, const SourceRules& rules,
                                            std::vector<std::string>& skipped) {
  std::vector<fs::path> paths;
  for (const fs::path& folder : folders) {
    if (!fs::is_directory(folder))
      throw std::runtime_error("source folder " + folder.string() + " does not exist");
    for (const auto& entry :
         fs::recursive_directory_iterator(folder, fs::directory_options::follow_directory_symlink))
      if (entry.is_regular_file() && is_jpeg_name(entry.path())) paths.push_back(fs::canonical(entry.path()));
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());

  std::vector<std::optional<SourcePhoto>> found(paths.size());
  std::vector<std::string> reasons(paths.size());
  tbb::parallel_for(std::size_t{0}, paths.size(), [&](std::size_t i) {
    const std::vector<std::uint8_t> bytes = read_file(paths[i]);
    const TurboJpeg decoder(TurboJpeg::Kind::decompress);
    const std::optional<Header> header = read_header(decoder, bytes);
    if (!header) {
      reasons[i] = "not a readable JPEG: " + decoder.error();
    } else if (header->colorspace == TJCS_CMYK || header->colorspace == TJCS_YCCK) {
      reasons[i] = "CMYK";
    } else if (std::min(header->width, header->height) < rules.min_side) {
      reasons[i] = "smaller than " + std::to_string(rules.min_side) + " px";
    } else if (static_cast<std::size_t>(header->width) * static_cast<std::size_t>(header->height) >
               rules.max_pixels) {
      reasons[i] = "more than " + std::to_string(rules.max_pixels) + " pixels";
    } else {
      found[i] = SourcePhoto{paths[i], header->width, header->height, bytes.size(),
                             XXH3_64bits(bytes.data(), bytes.size())};
    }
  });

  std::map<std::uint64_t, SourcePhoto> by_content;  // ordered by hash, one per content
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!found[i]) {
      skipped.push_back(paths[i].string() + ": " + reasons[i]);
    } else if (!by_content.emplace(found[i]->hash, *found[i]).second) {
      skipped.push_back(paths[i].string() + ": same content as " +
                        by_content.at(found[i]->hash).path.string());
    }
  }
  std::vector<SourcePhoto> photos;
  photos.reserve(by_content.size());
  for (auto& [hash, photo] : by_content) photos.push_back(std::move(photo));
  return photos;
}

cv::Mat decode_photo(const SourcePhoto& photo, int min_short_side) {
  const std::vector<std::uint8_t> bytes = read_file(photo.path);
  const TurboJpeg decoder(TurboJpeg::Kind::decompress);
  int width = photo.width, height = photo.height;
  for (const int denominator : {2, 4, 8}) {
    if (std::min(photo.width, photo.height) / denominator < min_short_side) break;
    width = (photo.width + denominator - 1) / denominator;  // TJSCALED for 1/denominator
    height = (photo.height + denominator - 1) / denominator;
  }
  cv::Mat rgb(height, width, CV_8UC3);
  if (tjDecompress2(decoder.get(), bytes.data(), bytes.size(), rgb.data, width, static_cast<int>(rgb.step),
                    height, TJPF_RGB, 0) != 0 &&
      tjGetErrorCode(decoder.get()) != TJERR_WARNING)  // a warning (say, trailing garbage) still decodes
    throw std::runtime_error("cannot decode " + photo.path.string() + ": " + decoder.error());
  return rgb;
}

}  // namespace conveyor::data
