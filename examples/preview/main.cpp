// preview: what a data set looks like after its augmentation, before a long run trains on it.
//
//   preview --data PATH --format folder|segmentation|coco|shards [--annotations FILE] --size 224 --count N
//           --seed S --out DIR
//
// Runs the format's standard chain, decode_random_resized_crop(size), flip_horizontal(0.5), distort(0.4,
// 0.4, 0.4) (masks and boxes move with the image), on the data set's first N samples and writes, for
// sample i as four digits (0000, 0001, ...):
//   DIR/IIII.png        the augmented image, RGB, 8-bit
//   DIR/IIII.mask.png   its mask when the data has masks (same size, the class ids, 8 or 16 bits)
//   DIR/IIII.json       {"label": ..., "boxes": [[x0, y0, x1, y1], ...], "classes": [...]} in output pixels
//                       (empty lists when the data has no boxes), and "keypoints": [[[x, y, v], ...], ...]
//                       per instance when it has keypoints (v = 0: not labelled or out of the picture)
//   DIR/sheet.png       a contact sheet: every image with its mask laid over it, its boxes and keypoints
//   drawn
// PATH is an ImageFolder (folder), a folder with images/ and masks/ (segmentation), the images folder of
// --annotations, a COCO instances or keypoints JSON (coco), or a shard file, glob or brace pattern (shards:
// members .jpg/.jpeg/.png, and .mask.png and .json when the shards have them).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/fields/keypoints.h"
#include "conveyor/ops.h"
#include "examples/preview/contact_sheet.h"

namespace {

namespace fs = std::filesystem;
using namespace conveyor;

struct Options {
  std::string data, format, annotations, out;
  int size = 224;
  int count = 16;
  std::uint64_t seed = 0;
};

// Shards: images of any of the three extensions, and the mask and boxes members when the first sample has
// them (a shard of a classification set has neither).
Dataset open_shards(const std::string& pattern) {
  const std::vector<std::string> shards = expand_shard_pattern(pattern);
  TarShardOptions options;
  options.image_extensions = {"jpg", "jpeg", "png"};
  options.shuffle_shards = false;
  options.parallel_shards = 1;
  options.mask_extension = "mask.png";
  options.fields_extension = "json";
  SampleIterator probe =
      Dataset::tar_shards(shards, options).take(1).with_options({.on_error = OnError::skip}).begin();
  while (probe.next()) {
  }
  const PipelineStats stats = probe.stats();
  if (stats.skip_reasons.contains("read: no_mask")) options.mask_extension.clear();
  if (stats.skip_reasons.contains("read: no_fields")) options.fields_extension.clear();
  return Dataset::tar_shards(shards, options);
}

Dataset open_data(const Options& o) {
  if (o.format == "folder") return Dataset::image_folder(o.data);
  if (o.format == "segmentation") return Dataset::segmentation_folder(o.data);
  if (o.format == "coco") {
    if (o.annotations.empty())
      throw InvalidArgument("--format coco needs --annotations FILE (the instances JSON)");
    return Dataset::coco_detection(o.annotations, o.data);
  }
  if (o.format == "shards") return open_shards(o.data);
  throw InvalidArgument("--format is folder, segmentation, coco or shards, not '" + o.format + "'");
}

void write(const fs::path& path, std::span<const std::uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw IoError("preview: cannot write '" + path.string() + "'");
}

std::string numbered(std::size_t i, const char* suffix) {
  char name[32];
  std::snprintf(name, sizeof name, "%04zu%s", i, suffix);
  return name;
}

nlohmann::json fields_json(const Sample& sample) {
  nlohmann::json json{
      {"label", sample.label}, {"boxes", nlohmann::json::array()}, {"classes", nlohmann::json::array()}};
  for (std::size_t b = 0; b < sample.boxes.size(); ++b) {
    const Box& box = sample.boxes.boxes()[b];
    json["boxes"].push_back({box.x0, box.y0, box.x1, box.y1});
    json["classes"].push_back(sample.boxes.classes()[b]);
  }
  if (const KeypointsField* keypoints = sample.find_field<KeypointsField>();
      keypoints && keypoints->points > 0) {
    json["keypoints"] = nlohmann::json::array();
    for (std::size_t i = 0; i < keypoints->instances(); ++i) {
      nlohmann::json instance = nlohmann::json::array();
      for (const Keypoint& point : keypoints->instance(i)) instance.push_back({point.x, point.y, point.v});
      json["keypoints"].push_back(std::move(instance));
    }
  }
  return json;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"preview: a data set after its augmentation, as images, masks, boxes and a contact sheet"};
  app.add_option("--data", o.data, "folder, segmentation folder, COCO images folder, or shards (required)");
  app.add_option("--format", o.format, "folder, segmentation, coco or shards (required)");
  app.add_option("--annotations", o.annotations, "coco: the instances JSON");
  app.add_option("--size", o.size, "output side (random resized crop)")->capture_default_str();
  app.add_option("--count", o.count, "samples to write, the data set's first")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the augmentation")->capture_default_str();
  app.add_option("--out", o.out, "folder for the files (made when missing; required)");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report them before an unknown flag.
    for (const auto& [value, name] :
         {std::pair{&o.data, "--data"}, {&o.format, "--format"}, {&o.out, "--out"}})
      if (value->empty()) throw CLI::RequiredError(name);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  try {
    if (o.size <= 0 || o.count <= 0) throw InvalidArgument("--size and --count must be positive");
    const Dataset samples = open_data(o)
                                .take(static_cast<std::uint64_t>(o.count))
                                .map(ops::decode_random_resized_crop(o.size))
                                .map(ops::flip_horizontal(0.5))
                                .map(ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
                                .with_options({.seed = o.seed});
    fs::create_directories(o.out);
    std::vector<Sample> kept;
    for (const Sample& sample : samples) {
      const std::size_t i = kept.size();
      write(fs::path(o.out) / numbered(i, ".png"), ops::encode_png(sample.image()));
      if (!sample.mask().empty())
        write(fs::path(o.out) / numbered(i, ".mask.png"), ops::encode_png(sample.mask()));
      const std::string json = fields_json(sample).dump();
      write(fs::path(o.out) / numbered(i, ".json"),
            {reinterpret_cast<const std::uint8_t*>(json.data()), json.size()});
      kept.push_back(sample);
    }
    if (kept.empty()) throw InvalidArgument("the data set has no sample");
    const int columns = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(kept.size()))));
    const Image sheet = preview::contact_sheet(kept, columns);
    write(fs::path(o.out) / "sheet.png", ops::encode_png(sheet.view()));
    std::printf("preview: %zu samples of %s (%s) in %s: IIII.png%s, IIII.json, sheet.png\n", kept.size(),
                o.data.c_str(), o.format.c_str(), o.out.c_str(),
                kept.front().mask().empty() ? "" : ", IIII.mask.png");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "preview: %s\n", error.what());
    return 1;
  }
  return 0;
}
