#include "src/sources/segmentation_folder.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/read_file.h"
#include "src/sources/source.h"

namespace conveyor::detail {
namespace {

namespace fs = std::filesystem;

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

// Regular files (or links to them) below `folder` whose extension is one of `extensions`, by their path
// below it without the extension ("city/0001"). Two files of one name throw.
std::map<std::string, std::string> list_files(const fs::path& folder,
                                              std::initializer_list<const char*> extensions) {
  std::error_code error;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, error);
  if (error) throw IoError("segmentation_folder: cannot list '" + folder.string() + "': " + error.message());
  std::map<std::string, std::string> files;
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error)
      throw IoError("segmentation_folder: cannot list '" + folder.string() + "': " + error.message());
    const std::string ext = lower_extension(it->path());
    if (std::none_of(extensions.begin(), extensions.end(), [&](const char* e) { return ext == e; })) continue;
    std::error_code status_error;
    if (!it->is_regular_file(status_error) || status_error) continue;
    std::string key = it->path().lexically_relative(folder).replace_extension().string();
    const auto [place, fresh] = files.emplace(std::move(key), it->path().string());
    if (!fresh)
      throw InvalidArgument("segmentation_folder: '" + place->second + "' and '" + it->path().string() +
                            "' have the same name: which one is the image?");
  }
  return files;
}

class SegmentationFolder final : public SampleSource {
 public:
  SegmentationFolder(const fs::path& root, const SegmentationFolderOptions& options) : root_(root.string()) {
    const fs::path image_root = root / options.images, mask_root = root / options.masks;
    const std::map<std::string, std::string> images = list_files(image_root, {".jpg", ".jpeg", ".png"});
    const std::map<std::string, std::string> masks = list_files(mask_root, {".png"});
    const auto unpaired = [&](const std::string& path, const std::string& reason) {
      if (options.unpaired == Unpaired::fail) throw InvalidArgument("segmentation_folder: " + reason);
      left_out_.push_back({path, "source", "unpaired: " + reason});
    };
    for (const auto& [key, image] : images) {
      const auto mask = masks.find(key);
      if (mask == masks.end()) {
        unpaired(image, "the image '" + image + "' has no mask '" + (mask_root / key).string() + ".png'");
        continue;
      }
      images_.add(image);
      masks_.add(mask->second);
    }
    for (const auto& [key, mask] : masks)
      if (!images.contains(key))
        unpaired(mask, "the mask '" + mask + "' has no image '" + (image_root / key).string() +
                           ".jpg' (or .jpeg, .png)");
    if (images_.size() == 0)
      throw InvalidArgument("segmentation_folder: no image with its mask under '" + root_ + "' (" +
                            image_root.string() + ", " + mask_root.string() + ")");
  }

  std::size_t size() const override { return images_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits& limits) const override {
    sample.path.assign(images_[i]);
    read_file(images_.c_str(i), sample.encoded, limits.max_file_bytes);
    read_file(masks_.c_str(i), sample.encoded_mask, limits.max_file_bytes);
  }
  FieldSet fields() const override { return {.mask = true}; }
  std::string describe() const override {
    return "segmentation folder '" + root_ + "' " + std::to_string(images_.size());
  }
  std::string path(std::size_t i) const override { return std::string(images_[i]); }
  std::vector<SkippedSample> left_out() const override { return left_out_; }

 private:
  std::string root_;
  PathTable images_, masks_;
  std::vector<SkippedSample> left_out_;
};

}  // namespace

std::shared_ptr<const SampleSource> segmentation_folder(const fs::path& root,
                                                        const SegmentationFolderOptions& options) {
  return std::make_shared<SegmentationFolder>(root, options);
}

}  // namespace conveyor::detail
