// make_fields: segmentation masks and boxes over a folder of photos, in the three layouts conveyor reads.
//
//   make_fields --input DIR --out DIR [--count N] [--seed 1] [--classes 20] [--max-shapes 6]
//               [--shard-size 64] [--threads N]
//   make_fields --recipe [options]   the line that identifies the output (for stamps)
//
// The photos are the input ImageFolder's (Dataset::image_folder's order, the first N). On each, 1 to
// max-shapes shapes (rectangles, ellipses, triangles) are drawn, each of a class 1..classes in that class's
// colour with a little texture; later shapes cover earlier ones. The class ids go into a mask (0:
// background), and each shape with at least 16 visible pixels gets the box of its visible pixels. Output:
//   OUT/images/NNNNNN.jpg, OUT/masks/NNNNNN.png       a segmentation folder (Dataset::segmentation_folder)
//   OUT/instances.json                                COCO detection over OUT/images (coco_detection):
//                                                     category ids 1..classes, bbox [x, y, w, h]
//   OUT/keypoints.json                                the same with COCO keypoints: each shape's topmost,
//                                                     leftmost and rightmost visible pixel (their centres) as
//                                                     points "top", "left", "right", v = 2
//   OUT/shards/shard-NNNNNN.tar, OUT/shards/shards.json   WebDataset shards: NNNNNN.jpg, .mask.png, .json
//                                                     ({"boxes": [[x0, y0, x1, y1]], "classes": [...]},
//                                                     classes as the mask's ids), .cls (the photo's
//                                                     folder label), and a wids index
// Everything is a function of (seed, i) and the photos, so the output does not depend on the thread count.
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/ops/decode_jpeg.h"
#include "conveyor/ops/decode_png.h"
#include "conveyor/random.h"
#include "data/common/tool_support.h"
#include "data/make_shards/tar_writer.h"
#include "src/core/tsan.h"

namespace {

namespace fs = std::filesystem;
using namespace conveyor;
using nlohmann::json;

// Bump when the output changes: stamps use it.
constexpr const char* kVersion = "make_fields v2";
constexpr int kMinVisiblePixels = 16;

struct Options {
  fs::path input, out;
  int count = 0;  // 0: every photo
  std::uint64_t seed = 1;
  int classes = 20;
  int max_shapes = 6;
  double shard_mb = 64;
  int threads = 0;
  bool recipe = false;
};

struct Made {
  std::string name;  // NNNNNN
  std::int64_t label = -1;
  int width = 0, height = 0;
  BoxList boxes;  // classes: the mask's ids
  std::vector<std::array<float, 9>> keypoints{};  // per box: top, left, right as x, y, v
};

// The centres of a shape's topmost, leftmost and rightmost visible pixels (the first in reading order).
std::array<float, 9> keypoints_of(const cv::Mat& where) {
  cv::Point top(-1, -1), left(-1, -1), right(-1, -1);
  for (int y = 0; y < where.rows; ++y) {
    const std::uint8_t* row = where.ptr<std::uint8_t>(y);
    for (int x = 0; x < where.cols; ++x) {
      if (!row[x]) continue;
      if (top.y < 0) top = {x, y};
      if (left.x < 0 || x < left.x) left = {x, y};
      if (x > right.x) right = {x, y};
    }
  }
  const auto centre = [](cv::Point p) {
    return std::pair{static_cast<float>(p.x) + 0.5f, static_cast<float>(p.y) + 0.5f};
  };
  const auto [tx, ty] = centre(top);
  const auto [lx, ly] = centre(left);
  const auto [rx, ry] = centre(right);
  return {tx, ty, 2, lx, ly, 2, rx, ry, 2};
}

std::string name_of(std::size_t i) {
  char text[16];
  std::snprintf(text, sizeof text, "%06zu", i);
  return text;
}

// Class c's colour: hues spread round the wheel, light and saturated enough to stand out from photos.
cv::Vec3b colour_of(int cls, int classes) {
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(static_cast<double>(cls - 1) * 180.0 / classes, 200, 230));
  cv::Mat rgb;
  cv::cvtColor(hsv, rgb, cv::COLOR_HSV2RGB);
  return rgb.at<cv::Vec3b>(0, 0);
}

// Draws one shape into `region` (255 where it is), of a kind and size drawn from rng.
void draw_shape(cv::Mat& region, Rng& rng) {
  const int w = region.cols, h = region.rows, side = std::min(w, h);
  const int size = static_cast<int>(side * rng.uniform(0.12, 0.45));
  const int cx = static_cast<int>(rng.below(static_cast<std::uint64_t>(w)));
  const int cy = static_cast<int>(rng.below(static_cast<std::uint64_t>(h)));
  switch (rng.below(3)) {
    case 0:
      cv::rectangle(
          region, cv::Point(cx - size / 2, cy - size / 3),
          cv::Point(cx + size / 2,
                    cy + size / 3 + static_cast<int>(rng.below(static_cast<std::uint64_t>(size) / 2 + 1))),
          cv::Scalar(255), cv::FILLED);
      break;
    case 1:
      cv::ellipse(region, cv::Point(cx, cy), cv::Size(size / 2, std::max(2, size / 3)), rng.uniform(0, 180),
                  0, 360, cv::Scalar(255), cv::FILLED);
      break;
    default: {
      const std::vector<cv::Point> triangle{
          {cx, cy - size / 2}, {cx - size / 2, cy + size / 2}, {cx + size / 2, cy + size / 3}};
      cv::fillPoly(region, std::vector<std::vector<cv::Point>>{triangle}, cv::Scalar(255));
    }
  }
}

// One photo with its shapes: the JPEG and the mask PNG written, the boxes returned.
Made make_one(const Options& options, std::size_t i, const std::string& photo, std::int64_t label,
              data::JpegEncoder& encoder) {
  const Image decoded = ops::decode_jpeg(data::read_file(photo));
  cv::Mat rgb(decoded.height(), decoded.width(), CV_8UC3, const_cast<std::uint8_t*>(decoded.data()));
  rgb = rgb.clone();
  cv::Mat mask(rgb.rows, rgb.cols, CV_8UC1, cv::Scalar(0));
  cv::Mat instance(rgb.rows, rgb.cols, CV_8UC1, cv::Scalar(0));
  Rng rng(options.seed, combine_seeds(0x4649454C44ull, i));  // "FIELD"
  const int shapes = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(options.max_shapes)));
  std::vector<int> class_of(static_cast<std::size_t>(shapes) + 1, 0);
  cv::Mat region(rgb.rows, rgb.cols, CV_8UC1);
  for (int s = 1; s <= shapes; ++s) {
    const int cls = 1 + static_cast<int>(rng.below(static_cast<std::uint64_t>(options.classes)));
    class_of[static_cast<std::size_t>(s)] = cls;
    region.setTo(0);
    draw_shape(region, rng);
    const cv::Vec3b colour = colour_of(cls, options.classes);
    // A little texture (a hash of the pixel's place: the same on any thread), so that the shape is not a
    // flat patch.
    const std::uint64_t texture_seed = rng.next();
    for (int y = 0; y < rgb.rows; ++y) {
      const std::uint8_t* inside = region.ptr<std::uint8_t>(y);
      cv::Vec3b* pixel = rgb.ptr<cv::Vec3b>(y);
      for (int x = 0; x < rgb.cols; ++x) {
        if (!inside[x]) continue;
        const auto shade =
            static_cast<std::uint8_t>(mix64(texture_seed + static_cast<std::uint64_t>(y) * 65536 + x) % 24);
        for (int c = 0; c < 3; ++c) pixel[x][c] = static_cast<std::uint8_t>(std::max(0, colour[c] - shade));
      }
    }
    mask.setTo(cls, region);
    instance.setTo(s, region);
  }
  Made made{name_of(i), label, rgb.cols, rgb.rows, {}};
  for (int s = 1; s <= shapes; ++s) {
    cv::Mat where = instance == s;
    if (cv::countNonZero(where) < kMinVisiblePixels) continue;
    const cv::Rect box = cv::boundingRect(where);
    made.boxes.add({static_cast<float>(box.x), static_cast<float>(box.y),
                    static_cast<float>(box.x + box.width), static_cast<float>(box.y + box.height)},
                   class_of[static_cast<std::size_t>(s)]);
    made.keypoints.push_back(keypoints_of(where));
  }
  const std::span<const std::uint8_t> jpeg =
      encoder.encode(rgb.data, rgb.cols, rgb.rows, TJPF_RGB, TJSAMP_420, 90);
  data::write_file(options.out / "images" / (made.name + ".jpg"), jpeg);
  const std::vector<std::uint8_t> png =
      ops::encode_png(ConstMaskView(mask.data, {mask.rows, mask.cols, MaskType::uint8}));
  data::write_file(options.out / "masks" / (made.name + ".png"), png);
  return made;
}

json boxes_json(const BoxList& boxes) {
  json out{{"boxes", json::array()}, {"classes", json::array()}};
  for (std::size_t b = 0; b < boxes.size(); ++b) {
    const Box& box = boxes.boxes()[b];
    out["boxes"].push_back({box.x0, box.y0, box.x1, box.y1});
    out["classes"].push_back(boxes.classes()[b]);
  }
  return out;
}

// instances.json, or with keypoints keypoints.json (the same annotations, each with its shape's points).
void write_coco(const Options& options, const std::vector<Made>& made, bool keypoints) {
  json coco{{"images", json::array()}, {"annotations", json::array()}, {"categories", json::array()}};
  std::int64_t annotation = 1;
  for (std::size_t i = 0; i < made.size(); ++i) {
    const Made& m = made[i];
    coco["images"].push_back(
        {{"id", i + 1}, {"file_name", m.name + ".jpg"}, {"width", m.width}, {"height", m.height}});
    for (std::size_t b = 0; b < m.boxes.size(); ++b) {
      const Box& box = m.boxes.boxes()[b];
      coco["annotations"].push_back({{"id", annotation++},
                                     {"image_id", i + 1},
                                     {"bbox", {box.x0, box.y0, box.width(), box.height()}},
                                     {"area", box.area()},
                                     {"category_id", m.boxes.classes()[b]},
                                     {"iscrowd", 0}});
      if (keypoints) {
        // x, y as numbers, v as COCO writes it: an integer.
        json points = json::array();
        for (std::size_t k = 0; k < 9; ++k)
          k % 3 == 2 ? points.push_back(static_cast<int>(m.keypoints[b][k]))
                     : points.push_back(m.keypoints[b][k]);
        coco["annotations"].back()["keypoints"] = std::move(points);
        coco["annotations"].back()["num_keypoints"] = 3;
      }
    }
  }
  for (int c = 1; c <= options.classes; ++c) {
    coco["categories"].push_back({{"id", c}, {"name", "shape_" + std::to_string(c)}});
    if (keypoints) {
      coco["categories"].back()["keypoints"] = {"top", "left", "right"};
      coco["categories"].back()["skeleton"] = {{1, 2}, {1, 3}};
    }
  }
  const std::string text = coco.dump();
  data::write_file(options.out / (keypoints ? "keypoints.json" : "instances.json"),
                   {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

void write_shards(const Options& options, const std::vector<Made>& made) {
  const fs::path dir = options.out / "shards";
  fs::create_directories(dir);
  const auto limit = static_cast<std::uint64_t>(options.shard_mb * 1024 * 1024);
  json index{{"__kind__", "wids-shard-index-v1"}, {"wids_version", 1}, {"shardlist", json::array()}};
  std::optional<data::TarWriter> writer;
  std::string shard_name;
  std::uint64_t bytes = 0, samples = 0;
  const auto close = [&] {
    if (!writer) return;
    writer->close();
    writer.reset();
    index["shardlist"].push_back({{"url", shard_name}, {"nsamples", samples}, {"filesize", bytes}});
  };
  for (const Made& m : made) {
    const std::vector<std::uint8_t> jpeg = data::read_file(options.out / "images" / (m.name + ".jpg"));
    const std::vector<std::uint8_t> png = data::read_file(options.out / "masks" / (m.name + ".png"));
    const std::string fields = boxes_json(m.boxes).dump(), cls = std::to_string(m.label);
    std::uint64_t sample = 0;
    for (const auto& [ext, size] : {std::pair{".jpg", jpeg.size()},
                                    {".mask.png", png.size()},
                                    {".json", fields.size()},
                                    {".cls", cls.size()}})
      sample += data::TarWriter::member_bytes(m.name + ext, size) - data::TarWriter::kEndBytes;
    if (writer && bytes + sample + data::TarWriter::kEndBytes > limit) close();
    if (!writer) {
      shard_name = name_of(index["shardlist"].size());
      shard_name = "shard-" + shard_name + ".tar";
      writer.emplace(dir / shard_name);
      bytes = data::TarWriter::kEndBytes;
      samples = 0;
    }
    writer->add(m.name + ".jpg", jpeg);
    writer->add(m.name + ".mask.png", png);
    writer->add(m.name + ".json", {reinterpret_cast<const std::uint8_t*>(fields.data()), fields.size()});
    writer->add(m.name + ".cls", {reinterpret_cast<const std::uint8_t*>(cls.data()), cls.size()});
    bytes += sample;
    ++samples;
  }
  close();
  const std::string text = index.dump(1);
  data::write_file(dir / "shards.json", {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

std::string recipe(const Options& o) {
  return std::string(kVersion) + " count " + std::to_string(o.count) + " seed " + std::to_string(o.seed) +
         " classes " + std::to_string(o.classes) + " max-shapes " + std::to_string(o.max_shapes) +
         " shard-size " + std::to_string(o.shard_mb);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "make_fields: segmentation masks and boxes over photos, as a segmentation folder, COCO JSON and "
      "shards"};
  app.add_option("--input", options.input, "an ImageFolder of JPEG photos");
  app.add_option("--out", options.out, "the output folder (new or empty)");
  app.add_option("--count", options.count, "photos to use, from the first (0: all)")->capture_default_str();
  app.add_option("--seed", options.seed, "seed of the shapes")->capture_default_str();
  app.add_option("--classes", options.classes, "shape classes (mask ids 1..N)")
      ->capture_default_str()
      ->check(CLI::Range(1, 254));
  app.add_option("--max-shapes", options.max_shapes, "shapes per photo, 1..N")
      ->capture_default_str()
      ->check(CLI::Range(1, 254));
  app.add_option("--shard-size", options.shard_mb, "MB per shard")->capture_default_str();
  app.add_option("--threads", options.threads, "threads (0: all cores)")->capture_default_str();
  app.add_flag("--recipe", options.recipe, "print the line that identifies the output, and exit");
  try {
    app.parse(argc, argv);
    if (!options.recipe && options.input.empty()) throw CLI::RequiredError("--input");
    if (!options.recipe && options.out.empty()) throw CLI::RequiredError("--out");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  if (options.recipe) {
    std::printf("%s\n", recipe(options).c_str());
    return 0;
  }
  try {
    const Dataset photos = Dataset::image_folder(options.input);
    std::size_t count = photos.source_size();
    if (options.count > 0) count = std::min(count, static_cast<std::size_t>(options.count));
    fs::create_directories(options.out / "images");
    fs::create_directories(options.out / "masks");
    std::vector<Made> made(count);
    tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
    std::vector<std::string> errors(count);
    {
      // oneTBB's hand-offs, as ThreadSanitizer must see them (src/core/tsan.h): the loop's fork and join.
      const conveyor::detail::ForkJoin fork_join;
      const auto make_range = [&](const tbb::blocked_range<std::size_t>& range) {
        fork_join.begin_iteration();
        for (std::size_t i = range.begin(); i != range.end(); ++i) {
          thread_local data::JpegEncoder encoder;
          try {
            made[i] = make_one(options, i, photos.source_path(i), photos.source_label(i), encoder);
          } catch (const std::exception& error) {
            errors[i] = photos.source_path(i) + ": " + error.what();
          }
        }
        fork_join.end_iteration();
      };
      fork_join.fork();
      arena.execute([&] { tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1), make_range); });
    }
    for (const std::string& error : errors)
      if (!error.empty()) throw std::runtime_error(error);
    write_coco(options, made, false);
    write_coco(options, made, true);
    write_shards(options, made);
    std::size_t boxes = 0;
    for (const Made& m : made) boxes += m.boxes.size();
    std::printf(
        "make_fields: %zu images, %zu boxes, %d classes in %s (images/ masks/ instances.json keypoints.json "
        "shards/)\n",
        count, boxes, options.classes, options.out.c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_fields: %s\n", error.what());
    return 1;
  }
  return 0;
}
