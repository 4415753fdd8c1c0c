#include "src/sources/coco_detection.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/read_file.h"
#include "src/sources/field_kinds.h"
#include "src/sources/source.h"

namespace conveyor::detail {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A COCO file of a training split is hundreds of MB, most of it polygons: those are not kept.
json parse_without_polygons(const std::vector<std::uint8_t>& text, const std::string& where) {
  const json::parser_callback_t skip_polygons = [](int, json::parse_event_t event, json& parsed) {
    return !(event == json::parse_event_t::key && parsed == "segmentation");
  };
  json parsed = json::parse(text.begin(), text.end(), skip_polygons, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw InvalidArgument("coco_detection: '" + where + "' is not JSON");
  if (!parsed.is_object()) throw InvalidArgument("coco_detection: '" + where + "' is not a JSON object");
  return parsed;
}

const json& coco_list(const json& object, const char* name, const std::string& where) {
  const auto it = object.find(name);
  if (it == object.end() || !it->is_array())
    throw InvalidArgument("coco_detection: '" + where + "' has no \"" + name + "\" list");
  return *it;
}

template <class T>
T coco_field(const json& object, const char* name, const std::string& what) {
  const auto it = object.find(name);
  if (it == object.end()) throw InvalidArgument("coco_detection: " + what + " has no \"" + name + "\"");
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw InvalidArgument("coco_detection: " + what + "'s \"" + name + "\" is " + it->dump());
  }
}

class CocoDetection final : public SampleSource {
 public:
  CocoDetection(const fs::path& annotations, const fs::path& images, const CocoOptions& options)
      : annotations_(annotations.string()) {
    std::vector<std::uint8_t> text;
    read_file(annotations, text);
    const json root = parse_without_polygons(text, annotations_);
    text = {};

    // Categories in id order: class k is the k-th (contiguous) or the id itself.
    std::map<std::int64_t, std::string> categories;
    for (const json& category : coco_list(root, "categories", annotations_)) {
      const auto id = coco_field<std::int64_t>(category, "id", "a category");
      categories[id] = coco_field<std::string>(category, "name", "category " + std::to_string(id));
    }
    std::unordered_map<std::int64_t, std::int64_t> class_of;
    for (const auto& [id, name] : categories) {
      class_of[id] = options.contiguous_classes ? static_cast<std::int64_t>(class_names_.size()) : id;
      if (options.contiguous_classes) class_names_.push_back(name);
    }

    struct Image {
      std::string path;
      std::vector<std::size_t> annotations;
    };
    std::vector<Image> listed;
    std::unordered_map<std::int64_t, std::size_t> image_at;
    for (const json& image : coco_list(root, "images", annotations_)) {
      const auto id = coco_field<std::int64_t>(image, "id", "an image");
      const std::string what = "image " + std::to_string(id);
      if (!image_at.emplace(id, listed.size()).second)
        throw InvalidArgument("coco_detection: " + what + " is listed twice");
      listed.push_back({(images / coco_field<std::string>(image, "file_name", what)).string(), {}});
    }

    struct Annotation {
      Box box;
      std::int64_t cls;
      bool crowd;
      const json* source;  // for the readers of other per-instance fields (keypoints)
    };
    std::vector<Annotation> all;
    for (const json& annotation : coco_list(root, "annotations", annotations_)) {
      const std::string what =
          "annotation " + (annotation.contains("id") ? annotation["id"].dump() : std::to_string(all.size()));
      const auto image_id = coco_field<std::int64_t>(annotation, "image_id", what);
      const auto image = image_at.find(image_id);
      if (image == image_at.end())
        throw InvalidArgument("coco_detection: " + what + " is of image " + std::to_string(image_id) +
                              ", which \"images\" does not list");
      const auto category = coco_field<std::int64_t>(annotation, "category_id", what);
      const auto cls = class_of.find(category);
      if (cls == class_of.end())
        throw InvalidArgument("coco_detection: " + what + " has category " + std::to_string(category) +
                              ", which \"categories\" does not list");
      const auto bbox = coco_field<std::vector<double>>(annotation, "bbox", what);
      if (bbox.size() != 4) throw InvalidArgument("coco_detection: " + what + "'s bbox is not [x, y, w, h]");
      const bool crowd = annotation.contains("iscrowd") && coco_field<int>(annotation, "iscrowd", what) != 0;
      if (bbox[2] <= 0 || bbox[3] <= 0) continue;  // degenerate: no area to learn from
      if (crowd && options.crowd == CrowdBoxes::drop) continue;
      listed[image->second].annotations.push_back(all.size());
      all.push_back({{static_cast<float>(bbox[0]), static_cast<float>(bbox[1]),
                      static_cast<float>(bbox[0] + bbox[2]), static_cast<float>(bbox[1] + bbox[3])},
                     cls->second,
                     crowd,
                     &annotation});
    }

    // The other per-instance fields the file carries (each kind that COCO can carry says whether it does),
    // read for the same annotations as the boxes, in the same order.
    for (const FieldKind& kind : field_kinds())
      if (kind.coco != nullptr)
        if (std::unique_ptr<CocoInstanceReader> reader = kind.coco(root, annotations_)) {
          fields_.others.push_back(reader->prototype());
          readers_.push_back(std::move(reader));
        }

    // Flat tables, in the order the file lists its images.
    for (const Image& image : listed) {
      if (options.skip_empty && image.annotations.empty()) continue;
      paths_.add(image.path);
      first_.push_back(boxes_.size());
      for (std::size_t a : image.annotations) {
        boxes_.push_back(all[a].box);
        classes_.push_back(all[a].cls);
        crowd_.push_back(all[a].crowd ? 1 : 0);
        for (const std::unique_ptr<CocoInstanceReader>& reader : readers_)
          reader->add(*all[a].source,
                      "annotation " + (all[a].source->contains("id") ? (*all[a].source)["id"].dump()
                                                                     : std::to_string(a)));
      }
    }
    first_.push_back(boxes_.size());
    if (paths_.size() == 0)
      throw InvalidArgument("coco_detection: '" + annotations_ + "' lists no image" +
                            (options.skip_empty ? " with a box" : ""));
  }

  std::size_t size() const override { return paths_.size(); }
  void read(std::size_t i, Sample& sample, const ReadLimits& limits) const override {
    sample.path.assign(paths_[i]);
    read_file(paths_.c_str(i), sample.encoded, limits.max_file_bytes);
    sample.boxes.reserve(first_[i + 1] - first_[i]);
    for (std::size_t b = first_[i]; b < first_[i + 1]; ++b)
      sample.boxes.add(boxes_[b], classes_[b], crowd_[b] != 0);
    for (const std::unique_ptr<CocoInstanceReader>& reader : readers_)
      reader->read(first_[i], first_[i + 1], sample);
  }
  FieldSet fields() const override { return fields_; }
  std::string describe() const override {
    return "coco '" + annotations_ + "' " + std::to_string(paths_.size()) + " images " +
           std::to_string(boxes_.size()) + " boxes";
  }
  std::string path(std::size_t i) const override { return std::string(paths_[i]); }
  std::vector<std::string> class_names() const override { return class_names_; }

 private:
  std::string annotations_;
  PathTable paths_;
  std::vector<std::size_t> first_;  // image i's boxes: [first_[i], first_[i + 1])
  std::vector<Box> boxes_;
  std::vector<std::int64_t> classes_;
  std::vector<std::uint8_t> crowd_;
  std::vector<std::string> class_names_;
  FieldSet fields_{.boxes = true};
  std::vector<std::unique_ptr<CocoInstanceReader>> readers_;  // other per-instance fields, as the boxes
};

}  // namespace

std::shared_ptr<const SampleSource> coco_detection(const fs::path& annotations, const fs::path& images,
                                                   const CocoOptions& options) {
  return std::make_shared<CocoDetection>(annotations, images, options);
}

}  // namespace conveyor::detail
