// make_shards: packs an ImageFolder tree into WebDataset tar shards and a shard index, optionally prepared
// (issue 36: less work per image, by the user's choice, as FFCV prepares its data sets).
//
//   make_shards --input DIR --output DIR [--shard-size MB] [--prefix shard-] [--index shards.json]
//               [--max-side N] [--quality Q] [--store jpeg|raw] [--threads N]
//
// Prepared (prepare.h): --max-side shrinks every image whose longer side is over N to N (area
// interpolation) and re-encodes it at --quality (default 90); --quality alone re-encodes at that quality;
// --store raw keeps the decoded pixels (binary PPM members, "<key>.ppm"), which a run reads without any
// decoding. The loader reads a prepared set as it reads any shards (ppm is one of TarShardOptions'
// image extensions); the decode ops take a PPM as they take a JPEG. The images are prepared on --threads
// threads (0: all cores), in the folder's order, so the same input and settings give the same shards. The
// index records the settings, the input's bytes, what was written and the seconds it took.
//
// The images are taken as Dataset::image_folder lists them (classes are the sorted sub-folders, labels
// 0..K-1, images sorted), each as two members of one sample: "<key>.jpg" (the file's bytes, whatever
// its extension's case) and "<key>.cls" (the label as decimal text). The key is the image's path below
// DIR without its extension, with dots in the file name turned into '_' (a dot would end the key early
// for a WebDataset reader). A shard is closed before the sample that would take it over --shard-size MB
// (a larger sample gets a shard of its own). OUTPUT gets shard-000000.tar, shard-000001.tar, ... and the
// index (WebDataset's wids JSON: each shard's name, sample count and size), which Dataset::tar_shard_index
// reads. The same input gives byte-identical shards. OUTPUT must be empty or new; shards are written as
// NAME.partial and renamed when complete, the index last.
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "data/common/tool_support.h"
#include "data/make_shards/prepare.h"
#include "data/make_shards/tar_writer.h"
#include "src/core/tsan.h"

namespace {

namespace fs = std::filesystem;
using conveyor::data::TarWriter;

struct Options {
  fs::path input, output;
  double shard_mb = 256;
  std::string prefix = "shard-";
  std::string index = "shards.json";
  conveyor::data::Preparation preparation;
  int threads = 0;  // preparing: 0 = all cores
};

// What preparing cost and made, for the log and the index.
struct Prepared {
  std::uint64_t input_bytes = 0, images_bytes = 0;
  double seconds = 0;
};

struct ShardMade {
  std::string name;
  std::uint64_t samples = 0;
  std::uint64_t bytes = 0;
};

// The sample key of `path` below `root`: the relative path without extension, dots of the file name -> '_'.
// image_folder's paths are `root` joined with what it found below, so the relation is textual.
std::string key_of(const fs::path& root, const fs::path& path) {
  const fs::path relative = path.lexically_relative(root);
  std::string stem = relative.stem().string();
  for (char& c : stem)
    if (c == '.') c = '_';
  return (relative.parent_path() / stem).generic_string();
}

std::string shard_name(const Options& options, std::size_t i) {
  char digits[16];
  std::snprintf(digits, sizeof digits, "%06zu", i);
  return options.prefix + digits + ".tar";
}

// Writes shards one after another; each is renamed into place when it is complete.
class ShardSeries {
 public:
  explicit ShardSeries(const Options& options) : options_(options) {}

  void add(const std::string& key, const std::vector<std::uint8_t>& image, std::int64_t label) {
    const std::string label_text = std::to_string(label) + "\n";
    const std::string image_name = key + "." + options_.preparation.extension();
    const std::uint64_t size = TarWriter::member_bytes(image_name, image.size()) +
                               TarWriter::member_bytes(key + ".cls", label_text.size());
    const auto limit = static_cast<std::uint64_t>(options_.shard_mb * 1024 * 1024);
    if (writer_ && current_.samples > 0 && current_.bytes + size + TarWriter::kEndBytes > limit) finish();
    if (!writer_) {
      current_ = ShardMade{shard_name(options_, made_.size()), 0, 0};
      writer_.emplace(partial_path());
    }
    writer_->add(image_name, image);
    writer_->add(key + ".cls", {reinterpret_cast<const std::uint8_t*>(label_text.data()), label_text.size()});
    current_.bytes += size;
    ++current_.samples;
  }

  // Closes the last shard; returns every shard made.
  const std::vector<ShardMade>& finish_all() {
    if (writer_) finish();
    return made_;
  }

 private:
  fs::path partial_path() const { return options_.output / (current_.name + ".partial"); }

  void finish() {
    writer_->close();
    writer_.reset();
    const fs::path final_path = options_.output / current_.name;
    fs::rename(partial_path(), final_path);
    current_.bytes = fs::file_size(final_path);
    std::printf("%s  %llu samples  %.1f MB\n", current_.name.c_str(),
                static_cast<unsigned long long>(current_.samples), static_cast<double>(current_.bytes) / 1e6);
    std::fflush(stdout);
    made_.push_back(current_);
  }

  const Options& options_;
  std::optional<TarWriter> writer_;
  ShardMade current_;
  std::vector<ShardMade> made_;
};

// The input folder's own name ("train" for "data/train/").
std::string name_of(const fs::path& folder) {
  const fs::path normal = folder.lexically_normal();
  return (normal.has_filename() ? normal.filename() : normal.parent_path().filename()).string();
}

void write_index(const Options& options, const std::vector<ShardMade>& shards, const Prepared& prepared) {
  nlohmann::json list = nlohmann::json::array();
  for (const ShardMade& shard : shards)
    list.push_back({{"url", shard.name}, {"nsamples", shard.samples}, {"filesize", shard.bytes}});
  nlohmann::json index{{"__kind__", "wids-shard-index-v1"},
                       {"wids_version", 1},
                       {"name", name_of(options.input)},
                       {"shardlist", list}};
  const conveyor::data::Preparation& p = options.preparation;
  if (p.changes_images())
    index["prepared"] = {{"max_side", p.max_side},
                         {"quality", p.raw ? 0 : (p.quality > 0 ? p.quality : 90)},
                         {"store", p.raw ? "raw" : "jpeg"},
                         {"description", p.describe()},
                         {"input_image_bytes", prepared.input_bytes},
                         {"image_bytes", prepared.images_bytes},
                         {"seconds", prepared.seconds}};
  const std::string text = index.dump(2) + "\n";
  const fs::path path = options.output / options.index;
  const fs::path partial = path.string() + ".partial";
  conveyor::data::write_file(partial, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
  fs::rename(partial, path);
}

// The images of `images` from `first` on (at most `count`), prepared on the threads of the global control.
// An image that cannot be prepared fails the run, naming the file.
std::vector<std::vector<std::uint8_t>> prepare_block(const conveyor::Dataset& images, std::size_t first,
                                                     std::size_t count, const Options& options,
                                                     std::uint64_t& input_bytes) {
  std::vector<std::vector<std::uint8_t>> block(count);
  std::vector<std::uint64_t> sizes(count);
  std::vector<std::string> errors(count);
  {
    // oneTBB's hand-offs, as ThreadSanitizer must see them (src/core/tsan.h): the loop's fork and join.
    const conveyor::detail::ForkJoin fork_join;
    const auto prepare_range = [&](const tbb::blocked_range<std::size_t>& range) {
      fork_join.begin_iteration();
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        const fs::path path = images.source_path(first + i);
        try {
          const std::vector<std::uint8_t> bytes = conveyor::data::read_file(path);
          sizes[i] = bytes.size();
          block[i] = conveyor::data::prepare_image(bytes, options.preparation);
        } catch (const std::exception& error) {
          errors[i] = path.string() + ": " + error.what();
        }
      }
      fork_join.end_iteration();
    };
    fork_join.fork();
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1), prepare_range);
  }
  for (const std::string& error : errors)
    if (!error.empty()) throw std::runtime_error(error);
  for (const std::uint64_t size : sizes) input_bytes += size;
  return block;
}

int run(const Options& options) {
  const conveyor::Dataset images = conveyor::Dataset::image_folder(options.input);
  if (fs::exists(options.output) && !fs::is_empty(options.output))
    throw std::runtime_error("the output folder " + options.output.string() + " is not empty");
  fs::create_directories(options.output);
  std::map<std::string, std::string> keys;  // key -> the image that took it
  ShardSeries series(options);
  const conveyor::data::Preparation& preparation = options.preparation;
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const tbb::global_control parallelism(tbb::global_control::max_allowed_parallelism,
                                        static_cast<std::size_t>(threads));
  Prepared prepared;
  const auto start = std::chrono::steady_clock::now();
  constexpr std::size_t kBlock = 256;  // prepared at once, then written in order
  for (std::size_t first = 0; first < images.source_size(); first += kBlock) {
    const std::size_t count = std::min(kBlock, images.source_size() - first);
    std::vector<std::vector<std::uint8_t>> block;
    if (preparation.changes_images())
      block = prepare_block(images, first, count, options, prepared.input_bytes);
    for (std::size_t i = 0; i < count; ++i) {
      const fs::path path = images.source_path(first + i);
      const std::string key = key_of(options.input, path);
      const auto [taken, fresh] = keys.emplace(key, path.string());
      if (!fresh)
        throw std::runtime_error("two images make the sample key '" + key + "': " + taken->second + " and " +
                                 path.string());
      if (preparation.changes_images()) {
        prepared.images_bytes += block[i].size();
        series.add(key, block[i], images.source_label(first + i));
      } else {
        series.add(key, conveyor::data::read_file(path), images.source_label(first + i));
      }
    }
  }
  prepared.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<ShardMade>& shards = series.finish_all();
  write_index(options, shards, prepared);
  std::uint64_t bytes = 0;
  for (const ShardMade& shard : shards) bytes += shard.bytes;
  std::printf("%zu samples of %zu classes in %zu shards, %.1f MB; index %s\n", images.source_size(),
              images.class_names().size(), shards.size(), static_cast<double>(bytes) / 1e6,
              (options.output / options.index).c_str());
  if (preparation.changes_images())
    std::printf("prepared (%s) on %d threads in %.1f s: images %.1f MB -> %.1f MB (%.2fx)\n",
                preparation.describe().c_str(), threads, prepared.seconds,
                static_cast<double>(prepared.input_bytes) / 1e6,
                static_cast<double>(prepared.images_bytes) / 1e6,
                prepared.input_bytes > 0
                    ? static_cast<double>(prepared.images_bytes) / static_cast<double>(prepared.input_bytes)
                    : 0.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"make_shards: packs an ImageFolder tree into WebDataset tar shards and a shard index"};
  Options options;
  app.add_option("--input", options.input, "ImageFolder root (one sub-folder per class)")->required();
  app.add_option("--output", options.output, "folder for the shards and the index (empty or new)")
      ->required();
  app.add_option("--shard-size", options.shard_mb, "largest shard, in MB (2^20 bytes)")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1e6));
  app.add_option("--prefix", options.prefix, "shard name prefix")->capture_default_str();
  app.add_option("--index", options.index, "index file name")->capture_default_str();
  app.add_option("--max-side", options.preparation.max_side,
                 "prepare: shrink images whose longer side is over N pixels to N, re-encoded (0: keep sizes)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  app.add_option("--quality", options.preparation.quality,
                 "prepare: JPEG quality of re-encoded images (0: 90 when re-encoding, else the files' bytes)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  std::string store = "jpeg";
  app.add_option("--store", store, "prepare: jpeg, or raw (the decoded pixels as PPM: no decoding when read)")
      ->capture_default_str()
      ->check(CLI::IsMember({"jpeg", "raw"}));
  app.add_option("--threads", options.threads, "prepare on this many threads (0: all cores)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  CLI11_PARSE(app, argc, argv);
  options.preparation.raw = store == "raw";
  try {
    return run(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_shards: %s\n", error.what());
    return 1;
  }
}
