// make_imagenet_like: an ImageNet-like set of JPEGs cut from photos that Debian packages ship.
//
//   make_imagenet_like --out DIR --sources FOLDER... [--count 5000] [--seed 1] [--classes 100]
//                      [--min-side 300] [--max-source-pixels 5000000] [--threads N]
//   make_imagenet_like --list-sources --sources FOLDER...   the usable photos: "path width height bytes"
//   make_imagenet_like --recipe [options]                  the line that identifies the output (for stamps)
//
// Each image is a random crop, at a random zoom, of one source photo, resized to about 500x375 (500x375,
// 375x500, 500x333, 333x500, or 480-520 wide at 3:2 to 5:4), 4:2:0, with the quality searched so that the
// file lands near a size drawn from 55-105 KB: what ImageNet's training JPEGs look like to a decoder.
// Image i belongs to class i mod C; each class cuts its images from its own source photo(s). Everything
// is a function of (seed, i) and the sources' content, so the output does not depend on thread count.
// Output: DIR/train/c<class:03>/<i:06>.jpg and DIR/train.txt ("train/c042/000042.jpg 42" lines).
#include <oneapi/tbb/enumerable_thread_specific.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <opencv2/core/utility.hpp>
#include <opencv2/imgproc.hpp>
#include <string>
#include <vector>

#include "conveyor/random.h"
#include "data/common/tool_support.h"
#include "data/imagenet_like/source_photos.h"

namespace {

namespace fs = std::filesystem;
using namespace conveyor::data;

// Bump when the output changes: stamps use it. v2: sources ordered by XXH3 of their bytes (FNV-1a before).
constexpr const char* kVersion = "make_imagenet_like v2";
constexpr int kMinShortSide = 600;           // decode large photos down to about this short side
constexpr double kMinKb = 55, kMaxKb = 105;  // target file sizes are drawn from this range
// Sensor noise, in levels: camera photos have it and rendered wallpapers do not, and it is what makes
// real JPEGs large at ordinary qualities (without it smooth sources only reach 20-40 KB at quality 98).
constexpr double kMinNoise = 2.0, kMaxNoise = 4.0;

struct Options {
  fs::path out;
  std::vector<fs::path> sources;
  int count = 5000;
  std::uint64_t seed = 1;
  int classes = 100;
  SourceRules rules;
  int threads = 0;
  bool list_sources = false, recipe = false;
};

struct Plan {
  std::size_t source = 0;
  int cls = 0;
  int width = 0, height = 0;
  cv::Rect crop;
  double noise_sigma = 0;
  std::uint64_t noise_seed = 0;
  double target_bytes = 0;
};

struct Made {
  std::size_t bytes = 0;
  int quality = 0;
};

// The output size: mostly ImageNet's common 500x375 and 500x333, sometimes portrait, sometimes other widths.
cv::Size pick_size(conveyor::Rng& rng) {
  int long_side = 500, short_side = 375;
  const double kind = rng.uniform();
  if (kind < 0.2) {
    short_side = 333;
  } else if (kind >= 0.5) {
    long_side = 480 + static_cast<int>(rng.below(41));
    short_side = static_cast<int>(std::lround(long_side * rng.uniform(2.0 / 3.0, 0.8)));
  }
  return rng.bernoulli(0.25) ? cv::Size(short_side, long_side) : cv::Size(long_side, short_side);
}

// A crop of the output's aspect ratio covering at least half the photo's extent each way (a scene, as in
// ImageNet, not a smooth detail), at a zoom drawn log-uniformly; upscaling stays under 1.25x.
cv::Rect pick_crop(conveyor::Rng& rng, cv::Size photo, cv::Size out) {
  const double widest =
      std::min(static_cast<double>(photo.width) / out.width, static_cast<double>(photo.height) / out.height);
  const double narrowest = std::min(std::max(0.8, 0.5 * widest), widest);
  const double zoom = std::exp(rng.uniform(std::log(narrowest), std::log(widest)));
  const int w = std::clamp(static_cast<int>(std::lround(out.width * zoom)), 1, photo.width);
  const int h = std::clamp(static_cast<int>(std::lround(out.height * zoom)), 1, photo.height);
  const int x = static_cast<int>(rng.below(static_cast<std::uint64_t>(photo.width - w) + 1));
  const int y = static_cast<int>(rng.below(static_cast<std::uint64_t>(photo.height - h) + 1));
  return {x, y, w, h};
}

std::vector<Plan> make_plans(const Options& options, const std::vector<cv::Mat>& photos) {
  // Class c draws from the photos whose index is c mod C; with fewer photos than classes, from photo c mod S.
  std::vector<std::vector<std::size_t>> by_class(static_cast<std::size_t>(options.classes));
  for (std::size_t s = 0; s < photos.size(); ++s) by_class[s % by_class.size()].push_back(s);
  for (std::size_t c = 0; c < by_class.size(); ++c)
    if (by_class[c].empty()) by_class[c].push_back(c % photos.size());

  std::vector<Plan> plans(static_cast<std::size_t>(options.count));
  for (std::size_t i = 0; i < plans.size(); ++i) {
    conveyor::Rng rng(conveyor::combine_seeds(options.seed, i));
    Plan& plan = plans[i];
    plan.cls = static_cast<int>(i % by_class.size());
    const auto& candidates = by_class[static_cast<std::size_t>(plan.cls)];
    plan.source = candidates[rng.below(candidates.size())];
    const cv::Size size = pick_size(rng);
    plan.width = size.width;
    plan.height = size.height;
    plan.crop = pick_crop(rng, photos[plan.source].size(), size);
    plan.noise_sigma = rng.uniform(kMinNoise, kMaxNoise);
    plan.noise_seed = rng.next();
    plan.target_bytes = rng.uniform(kMinKb, kMaxKb) * 1000.0;
  }
  return plans;
}

// Bisects the quality (at most 6 encodes) for the file size nearest the plan's target.
Made encode_near_target(JpegEncoder& encoder, const cv::Mat& rgb, const Plan& plan,
                        std::vector<std::uint8_t>& best) {
  int low = 30, high = 98, quality = 85;
  Made made;
  double best_error = 1e300;
  for (int step = 0; step < 6; ++step) {
    const auto jpeg = encoder.encode(rgb.data, rgb.cols, rgb.rows, TJPF_RGB, TJSAMP_420, quality);
    const double error = std::abs(static_cast<double>(jpeg.size()) - plan.target_bytes);
    if (error < best_error) {
      best_error = error;
      best.assign(jpeg.begin(), jpeg.end());
      made = {jpeg.size(), quality};
    }
    if (error < 0.06 * plan.target_bytes) break;
    (static_cast<double>(jpeg.size()) < plan.target_bytes ? low : high) = quality;
    const int next = (low + high) / 2;
    if (next == quality) break;
    quality = next;
  }
  return made;
}

std::string class_name(int cls) {
  char name[16];
  std::snprintf(name, sizeof name, "c%03d", cls);
  return name;
}

std::string relative_path(const Plan& plan, std::size_t i) {
  char name[32];
  std::snprintf(name, sizeof name, "%06zu.jpg", i);
  return "train/" + class_name(plan.cls) + "/" + name;
}

void print_summary(const std::vector<Made>& made, const std::vector<Plan>& plans, std::size_t sources,
                   double seconds) {
  std::vector<std::size_t> sizes;
  double quality_sum = 0, total = 0;
  std::map<std::pair<int, int>, int> shapes;
  std::size_t in_range = 0;
  for (std::size_t i = 0; i < made.size(); ++i) {
    sizes.push_back(made[i].bytes);
    total += static_cast<double>(made[i].bytes);
    quality_sum += made[i].quality;
    in_range += made[i].bytes >= 50'000 && made[i].bytes <= 110'000;
    ++shapes[{plans[i].width, plans[i].height}];
  }
  std::sort(sizes.begin(), sizes.end());
  const auto kb = [&](double q) {
    return static_cast<double>(sizes[static_cast<std::size_t>(q * (sizes.size() - 1))]) / 1000.0;
  };
  std::printf("imagenet-like: %zu JPEGs from %zu source photos in %.1f s, %.1f MB\n", made.size(), sources,
              seconds, total / 1e6);
  std::printf(
      "  file size KB: min %.1f  p5 %.1f  p25 %.1f  median %.1f  p75 %.1f  p95 %.1f  max %.1f  mean %.1f\n",
      kb(0), kb(0.05), kb(0.25), kb(0.5), kb(0.75), kb(0.95), kb(1), total / made.size() / 1000.0);
  std::printf("  within 50-110 KB: %.1f %%, mean quality %.1f\n", 100.0 * in_range / made.size(),
              quality_sum / made.size());
  std::printf("  size histogram (KB):");
  std::map<int, int> bins;
  for (const std::size_t size : sizes) ++bins[static_cast<int>(size / 10'000) * 10];
  for (const auto& [bin, n] : bins) std::printf(" %d-%d:%d", bin, bin + 10, n);
  int wide = 0;
  for (const auto& [shape, n] : shapes) wide += shape.first > shape.second ? n : 0;
  std::printf("\n  shapes: %zu distinct, %d landscape, %zu portrait; 500x375: %d, 500x333: %d\n",
              shapes.size(), wide, made.size() - static_cast<std::size_t>(wide), shapes[{500, 375}],
              shapes[{500, 333}]);
}

int run(const Options& options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> skipped;
  const std::vector<SourcePhoto> found = find_source_photos(options.sources, options.rules, skipped);
  if (options.list_sources) {
    for (const SourcePhoto& photo : found)
      std::printf("%s %d %d %zu\n", photo.path.c_str(), photo.width, photo.height, photo.bytes);
    return 0;
  }
  // Decode every photo once; each image is then a crop of memory.
  std::vector<cv::Mat> decoded(found.size());
  tbb::parallel_for(std::size_t{0}, found.size(), [&](std::size_t s) {
    try {
      decoded[s] = decode_photo(found[s], kMinShortSide);
    } catch (const std::exception& error) {
      std::fprintf(stderr, "make_imagenet_like: skipping %s\n", error.what());
    }
  });
  std::vector<cv::Mat> photos;
  for (cv::Mat& photo : decoded)
    if (!photo.empty()) photos.push_back(std::move(photo));
  if (photos.empty()) throw std::runtime_error("no usable JPEG photo in the source folders");

  const std::vector<Plan> plans = make_plans(options, photos);
  for (int c = 0; c < options.classes; ++c) fs::create_directories(options.out / "train" / class_name(c));
  std::vector<Made> made(plans.size());
  struct Worker {
    JpegEncoder encoder;
    cv::Mat resized, noise;
    std::vector<std::uint8_t> best;
  };
  tbb::enumerable_thread_specific<Worker> workers;
  tbb::parallel_for(std::size_t{0}, plans.size(), [&](std::size_t i) {
    Worker& worker = workers.local();
    const Plan& plan = plans[i];
    const cv::Mat crop = photos[plan.source](plan.crop);
    // Area averaging when shrinking (no aliasing), bilinear for the little upscaling allowed.
    const bool shrinking = plan.crop.width > plan.width;
    cv::resize(crop, worker.resized, cv::Size(plan.width, plan.height), 0, 0,
               shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
    worker.noise.create(worker.resized.size(), CV_16SC3);
    cv::RNG noise_rng(plan.noise_seed);
    noise_rng.fill(worker.noise, cv::RNG::NORMAL, cv::Scalar::all(0), cv::Scalar::all(plan.noise_sigma));
    cv::add(worker.resized, worker.noise, worker.resized, cv::noArray(), CV_8UC3);  // saturating
    made[i] = encode_near_target(worker.encoder, worker.resized, plan, worker.best);
    write_file(options.out / relative_path(plan, i), worker.best);
  });
  std::string list;
  for (std::size_t i = 0; i < plans.size(); ++i)
    list += relative_path(plans[i], i) + " " + std::to_string(plans[i].cls) + "\n";
  write_file(options.out / "train.txt", {reinterpret_cast<const std::uint8_t*>(list.data()), list.size()});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  print_summary(made, plans, photos.size(), seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app(
      "make_imagenet_like: an ImageNet-like set of JPEGs (about 500x375, 4:2:0, 55-105 KB) cut from\n"
      "photos, DIR/train/c<class:03>/<i:06>.jpg and DIR/train.txt. The output depends only on the\n"
      "options and the photos' content.");
  app.add_option("--out", options.out, "output folder DIR (required unless --list-sources or --recipe)");
  app.add_option("--sources", options.sources,
                 "folders searched (recursively) for source photos (required unless --recipe)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--count", options.count, "images to make")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000000));
  app.add_option("--seed", options.seed, "seed of the crops, sizes, noise and file sizes")
      ->capture_default_str();
  app.add_option("--classes", options.classes, "classes (image i has class i mod C)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--min-side", options.rules.min_side, "source photos need both sides at least PX")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--max-source-pixels", options.rules.max_pixels, "source photos have at most N pixels")
      ->capture_default_str();
  app.add_option("--threads", options.threads, "threads (0: all cores)")->check(CLI::Range(0, 4096));
  app.add_flag("--list-sources", options.list_sources,
               "print the usable photos (\"path width height bytes\"), in the order used, and exit");
  app.add_flag("--recipe", options.recipe,
               "print the line that identifies the output of these options (for stamps) and exit");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): --recipe needs neither, and CLI11 would report a missing
    // option before an unknown flag.
    if (!options.recipe && options.sources.empty()) throw CLI::RequiredError("--sources");
    if (!options.recipe && !options.list_sources && options.out.empty()) throw CLI::RequiredError("--out");
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  if (options.recipe) {
    std::printf("%s count %d seed %llu classes %d min-side %d max-source-pixels %zu\n", kVersion,
                options.count, static_cast<unsigned long long>(options.seed), options.classes,
                options.rules.min_side, options.rules.max_pixels);
    return 0;
  }
  try {
    cv::setNumThreads(0);  // TBB runs the images in parallel; OpenCV must not add threads of its own
    tbb::task_arena arena(options.threads > 0 ? options.threads : tbb::task_arena::automatic);
    return arena.execute([&] { return run(options); });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_imagenet_like: %s\n", error.what());
    return 1;
  }
}
