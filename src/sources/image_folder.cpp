#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "conveyor/error.h"
#include "src/sources/source.h"

namespace conveyor::detail {
namespace {

namespace fs = std::filesystem;

bool is_jpeg_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpg" || ext == ".jpeg";
}

[[noreturn]] void fail_listing(const fs::path& path, const std::error_code& error) {
  throw IoError("image_folder: cannot list '" + path.string() + "': " + error.message());
}

// The class folders: real directories directly under root, sorted. A symbolic link is not a class: a
// link back to root would otherwise list every image twice.
std::vector<std::string> class_folders(const fs::path& root) {
  std::error_code error;
  fs::directory_iterator it(root, fs::directory_options::skip_permission_denied, error);
  if (error) fail_listing(root, error);
  std::vector<std::string> names;
  for (; it != fs::directory_iterator(); it.increment(error)) {
    if (error) fail_listing(root, error);
    std::error_code status_error;
    if (fs::is_directory(it->symlink_status(status_error)) && !status_error)
      names.push_back(it->path().filename().string());
  }
  if (error) fail_listing(root, error);
  std::sort(names.begin(), names.end());
  return names;
}

// The images of one class: regular files (or links to regular files) with a JPEG extension, at any
// depth. recursive_directory_iterator does not follow directory links unless asked, so a link loop is
// listed once as an entry and never entered; an entry whose status cannot be read (a dangling or
// looping file link) is not an image.
std::vector<std::string> class_images(const fs::path& folder) {
  std::vector<std::string> images;
  std::error_code error;
  fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, error);
  if (error) fail_listing(folder, error);
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) fail_listing(folder, error);
    std::error_code status_error;
    if (is_jpeg_name(it->path()) && it->is_regular_file(status_error) && !status_error)
      images.push_back(it->path().string());
  }
  if (error) fail_listing(folder, error);
  std::sort(images.begin(), images.end());
  return images;
}

}  // namespace

FileListing list_image_folder(const fs::path& root) {
  FileListing listing;
  listing.class_names = class_folders(root);
  for (std::size_t label = 0; label < listing.class_names.size(); ++label) {
    for (const std::string& image : class_images(root / listing.class_names[label])) {
      listing.paths.add(image);
      listing.labels.push_back(static_cast<std::int64_t>(label));
    }
  }
  if (listing.paths.size() == 0)
    throw InvalidArgument("image_folder: no .jpg/.jpeg image in a class folder under '" + root.string() +
                          "'");
  return listing;
}

}  // namespace conveyor::detail
