// pipeline_throughput: images per second of the full CPU input pipeline on a folder of JPEGs (or a list
// file, tar shards, shards over HTTP: see open_data),
//   image_folder -> shuffle -> decode_random_resized_crop(S) -> flip_horizontal(0.5)
//   -> distort(.4, .4, .4) -> batch(B) (pinned when a GPU is present) -> prefetch
// at one thread count or a sweep of them. Warm-up is timed apart: images_per_s counts the images of the
// batches after the first W (W = the thread count, at least 1) over the time from batch W's arrival to
// the last batch's. bench/peers/torch_dataloader.py applies the same rule with W = its worker count:
// there each worker makes whole batches, so its first W batches arrive together and a clock started at
// the first batch would credit it with work done before the clock started. Also written: the rate after
// the first batch only (images_per_s_after_first_batch) and over the whole run including start-up
// (images_per_s_overall). A checksum over every batch's bytes and labels, in order, shows that the
// result does not depend on the thread count.
//
//   pipeline_throughput --data DIR|LIST|SHARDS|URL [--threads N] [--batch 256] [--size 224] [--epochs 1]
//                       [--seed 0] [--on-error fail|skip] [--json FILE] [--trace FILE] [--sweep 1,2,4,8,16]
//                       [--limit N] [--prefetch 4] [--repeat 1] [--in-flight N] [--deterministic 1|0]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/shards.h"
#include "conveyor/stats.h"
#include "conveyor/trace.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string data;
  int threads = 0;
  std::size_t batch = 256;
  int size = 224;
  std::uint64_t epochs = 1;
  std::uint64_t seed = 0;
  conveyor::OnError on_error = conveyor::OnError::fail;
  std::string json;
  std::string trace;
  std::vector<int> sweep;
  std::uint64_t limit = 0;
  std::size_t prefetch = 4;
  int repeat = 1;
  std::size_t in_flight = 0;  // 0: the library's default
  bool deterministic = true;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "pipeline_throughput: %s\n"
               "usage: pipeline_throughput --data DIR|LIST|SHARDS|URL [--threads N] [--batch B] [--size S]\n"
               "         [--epochs E] [--seed K] [--on-error fail|skip] [--json FILE] [--trace FILE]\n"
               "         [--sweep 1,2,4,8,16] [--limit N]\n"
               "         [--prefetch P] [--repeat R] [--in-flight N] [--deterministic 1|0]\n",
               problem.c_str());
  std::exit(2);
}

std::uint64_t parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0') usage("bad number for " + flag + ": '" + text + "'");
  return value;
}

Config parse(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--data")
      config.data = value;
    else if (flag == "--threads")
      config.threads = static_cast<int>(parse_number(flag, value));
    else if (flag == "--batch")
      config.batch = parse_number(flag, value);
    else if (flag == "--size")
      config.size = static_cast<int>(parse_number(flag, value));
    else if (flag == "--epochs")
      config.epochs = parse_number(flag, value);
    else if (flag == "--seed")
      config.seed = parse_number(flag, value);
    else if (flag == "--json")
      config.json = value;
    else if (flag == "--trace")
      config.trace = value;
    else if (flag == "--limit")
      config.limit = parse_number(flag, value);
    else if (flag == "--prefetch")
      config.prefetch = parse_number(flag, value);
    else if (flag == "--repeat")
      config.repeat = static_cast<int>(parse_number(flag, value));
    else if (flag == "--in-flight")
      config.in_flight = parse_number(flag, value);
    else if (flag == "--deterministic")
      config.deterministic = parse_number(flag, value) != 0;
    else if (flag == "--on-error") {
      if (value == "fail")
        config.on_error = conveyor::OnError::fail;
      else if (value == "skip")
        config.on_error = conveyor::OnError::skip;
      else
        usage("--on-error is fail or skip");
    } else if (flag == "--sweep") {
      for (std::size_t start = 0; start <= value.size();) {
        const std::size_t comma = std::min(value.find(',', start), value.size());
        config.sweep.push_back(static_cast<int>(parse_number(flag, value.substr(start, comma - start))));
        start = comma + 1;
      }
    } else {
      usage("unknown flag " + flag);
    }
  }
  if (config.data.empty()) usage("--data is required");
  if (config.batch == 0 || config.size <= 0 || config.prefetch == 0 || config.repeat <= 0)
    usage("sizes must be positive");
  if (config.threads == 0)
    config.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return config;
}

// xxHash64-style: four independent multiply-rotate lanes over 8-byte words, so hashing every byte of
// every batch costs the consumer thread little (a byte-at-a-time FNV would cost it a core at 10k img/s).
class Checksum {
 public:
  void add(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const std::uint8_t*>(data);
    std::size_t i = 0;
    for (; i + 32 <= size; i += 32)
      for (int lane = 0; lane < 4; ++lane) lanes_[lane] = round(lanes_[lane], load(bytes + i + 8 * lane));
    for (; i + 8 <= size; i += 8) lanes_[0] = round(lanes_[0], load(bytes + i));
    for (; i < size; ++i) lanes_[1] = round(lanes_[1], bytes[i]);
    length_ += size;
  }
  std::uint64_t value() const {
    std::uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18);
    h ^= length_;
    h ^= h >> 33;
    h *= kPrime2;
    h ^= h >> 29;
    h *= kPrime3;
    return h ^ (h >> 32);
  }

 private:
  static constexpr std::uint64_t kPrime1 = 0x9E3779B185EBCA87ull, kPrime2 = 0xC2B2AE3D27D4EB4Full,
                                 kPrime3 = 0x165667B19E3779F9ull;
  static std::uint64_t rotl(std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static std::uint64_t load(const std::uint8_t* p) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static std::uint64_t round(std::uint64_t acc, std::uint64_t input) {
    return rotl(acc + input * kPrime2, 31) * kPrime1;
  }
  std::uint64_t lanes_[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  std::uint64_t length_ = 0;
};

struct Result {
  int threads = 0;
  double images_per_s = 0;  // after the warm-up batches (see the file comment)
  double images_per_s_after_first_batch = 0;
  double images_per_s_overall = 0;
  std::uint64_t images = 0;
  std::uint64_t warmup_batches = 0;
  double steady_s = 0;
  double first_batch_s = 0;
  std::uint64_t checksum = 0;
  conveyor::PipelineStats stats;
};

// What --data names, and the sample shuffle buffer that suits it.
struct DataSource {
  conveyor::Dataset dataset;
  std::size_t shuffle_buffer;
};

// --data is a folder (ImageFolder), a list file, tar shards (a file or URL ending in .json is their
// index; else a pattern such as DIR/shard-{000000..000099}.tar or DIR/*.tar, or http(s) URLs of shards).
// Tar shards are shuffled per epoch (by --seed) and their shuffle buffer holds the samples' bytes, so it
// is 1,000 rather than 10,000.
DataSource open_data(const Config& config) {
  const std::string& data = config.data;
  const bool url = data.starts_with("http://") || data.starts_with("https://");
  if (!url && std::filesystem::is_directory(data)) return {conveyor::Dataset::image_folder(data), 10'000};
  conveyor::TarShardOptions shards;
  shards.seed = config.seed;
  if (data.ends_with(".json")) return {conveyor::Dataset::tar_shard_index(data, shards), 1'000};
  const bool pattern = url || data.find_first_of("{*?[") != std::string::npos || data.ends_with(".tar") ||
                       data.ends_with(".tar.gz") || data.ends_with(".tgz");
  if (pattern) return {conveyor::Dataset::tar_shards(conveyor::expand_shard_pattern(data), shards), 1'000};
  return {conveyor::Dataset::list_file(data), 10'000};
}

Result run_once(const Config& config, int threads, const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  namespace ops = conveyor::ops;
  const auto start = Clock::now();
  const DataSource source = open_data(config);
  conveyor::Dataset files = source.dataset;
  if (config.limit > 0) files = files.take(config.limit);
  const conveyor::BatchedDataset batches =
      files.shuffle(source.shuffle_buffer, config.seed)
          .repeat(config.epochs)
          .map(ops::decode_random_resized_crop(config.size))
          .map(ops::flip_horizontal(0.5))
          .map(ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
          .with_options({.threads = threads,
                         .deterministic = config.deterministic,
                         .on_error = config.on_error,
                         .seed = config.seed,
                         .max_in_flight = config.in_flight,
                         .trace = trace})
          .batch(config.batch, conveyor::ImageShape{config.size, config.size, 3})
          .prefetch(config.prefetch);

  Result result;
  result.threads = threads;
  Checksum checksum;
  conveyor::BatchIterator it = batches.begin();
  const int consumer_track = trace ? trace->track("benchmark consumer") : -1;
  std::vector<std::pair<Clock::time_point, std::size_t>> arrivals;  // when each batch came, its size
  while (std::optional<conveyor::Batch> batch = it.next()) {
    arrivals.emplace_back(Clock::now(), batch->size());
    conveyor::TraceScope scope(trace.get(), consumer_track, "checksum");
    checksum.add(batch->pixels().data(), batch->pixels().size());
    checksum.add(batch->labels().data(), batch->labels().size_bytes());
    result.images += batch->size();
  }
  const auto end = Clock::now();
  const auto rate_after = [&](std::size_t warmup) {
    if (arrivals.size() <= warmup) return 0.0;
    std::uint64_t images = 0;
    for (std::size_t i = warmup; i < arrivals.size(); ++i) images += arrivals[i].second;
    const double seconds = std::chrono::duration<double>(end - arrivals[warmup - 1].first).count();
    return seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
  };
  // W warm-up batches, fewer when the run is too short to leave half of it after them.
  result.warmup_batches = std::min<std::size_t>(static_cast<std::size_t>(std::max(threads, 1)),
                                                std::max<std::size_t>(1, arrivals.size() / 2));
  if (!arrivals.empty()) {
    result.first_batch_s = std::chrono::duration<double>(arrivals.front().first - start).count();
    result.steady_s =
        std::chrono::duration<double>(end - arrivals[result.warmup_batches - 1].first).count();
    result.images_per_s = rate_after(result.warmup_batches);
    result.images_per_s_after_first_batch = rate_after(1);
    result.images_per_s_overall =
        static_cast<double>(result.images) / std::chrono::duration<double>(end - start).count();
  }
  result.checksum = checksum.value();
  result.stats = it.stats();
  return result;
}

// The median run of `repeat` (by images/s); the checksum must not change between them.
Result run(const Config& config, int threads, const std::shared_ptr<conveyor::TraceRecorder>& trace) {
  std::vector<Result> runs;
  for (int r = 0; r < config.repeat; ++r)
    runs.push_back(run_once(config, threads, r + 1 == config.repeat ? trace : nullptr));
  for (const Result& r : runs)
    if (r.checksum != runs.front().checksum) throw std::runtime_error("checksum changed between repeats");
  std::sort(runs.begin(), runs.end(),
            [](const Result& a, const Result& b) { return a.images_per_s < b.images_per_s; });
  return runs[runs.size() / 2];
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string hex(std::uint64_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016llx", static_cast<unsigned long long>(value));
  return text;
}

std::string point_json(const Result& r, double efficiency) {
  char text[512];
  std::snprintf(
      text, sizeof text,
      "{\"threads\": %d, \"images_per_s\": %.1f, \"images_per_s_after_first_batch\": %.1f, "
      "\"images_per_s_overall\": %.1f, \"images\": %llu, \"warmup_batches\": %llu, "
      "\"time_to_first_batch_s\": %.3f, \"steady_s\": %.3f, \"efficiency\": %.3f, \"checksum\": \"%s\", "
      "\"skipped\": %llu}",
      r.threads, r.images_per_s, r.images_per_s_after_first_batch, r.images_per_s_overall,
      static_cast<unsigned long long>(r.images), static_cast<unsigned long long>(r.warmup_batches),
      r.first_batch_s, r.steady_s, efficiency, hex(r.checksum).c_str(),
      static_cast<unsigned long long>(r.stats.skipped));
  return text;
}

void write_json(const Config& config, const Result& main, const std::vector<Result>& sweep,
                const std::vector<double>& efficiency) {
  std::string out = "{\n";
  out += "  \"benchmark\": \"pipeline_throughput\",\n";
  out += "  \"machine\": {\"hostname\": " + json_string(hostname()) +
         ", \"nproc\": " + std::to_string(std::thread::hardware_concurrency()) +
         ", \"commit\": " + json_string(CONVEYOR_GIT_COMMIT) + "},\n";
  char text[1024];
  std::snprintf(
      text, sizeof text,
      "  \"config\": {\"data\": %s, \"batch\": %zu, \"size\": %d, \"epochs\": %llu, \"seed\": %llu, "
      "\"on_error\": \"%s\", \"limit\": %llu, \"prefetch\": %zu, \"repeat\": %d, \"in_flight\": %zu, "
      "\"deterministic\": %s},\n",
      json_string(config.data).c_str(), config.batch, config.size,
      static_cast<unsigned long long>(config.epochs), static_cast<unsigned long long>(config.seed),
      config.on_error == conveyor::OnError::skip ? "skip" : "fail",
      static_cast<unsigned long long>(config.limit), config.prefetch, config.repeat, main.stats.max_in_flight,
      config.deterministic ? "true" : "false");
  out += text;
  std::snprintf(text, sizeof text,
                "  \"images_per_s\": %.1f,\n  \"images_per_s_after_first_batch\": %.1f,\n"
                "  \"images_per_s_overall\": %.1f,\n  \"warmup_batches\": %llu,\n"
                "  \"threads\": %d,\n  \"images\": %llu,\n  \"skipped\": %llu,\n"
                "  \"checksum\": \"%s\",\n  \"peak_rss_mb\": %.1f,\n  \"time_to_first_batch_s\": %.3f,\n"
                "  \"steady_s\": %.3f,\n  \"pinned\": %s,\n  \"pool_buffers\": %zu,\n",
                main.images_per_s, main.images_per_s_after_first_batch, main.images_per_s_overall,
                static_cast<unsigned long long>(main.warmup_batches), main.threads,
                static_cast<unsigned long long>(main.images),
                static_cast<unsigned long long>(main.stats.skipped), hex(main.checksum).c_str(),
                peak_rss_mb(), main.first_batch_s, main.steady_s, main.stats.pinned ? "true" : "false",
                main.stats.pool_buffers);
  out += text;
  out += "  \"skip_reasons\": {";
  bool first = true;
  for (const auto& [reason, count] : main.stats.skip_reasons) {
    out += (first ? "" : ", ") + json_string(reason) + ": " + std::to_string(count);
    first = false;
  }
  out += "},\n  \"stages\": [";
  for (std::size_t i = 0; i < main.stats.stages.size(); ++i) {
    const conveyor::StageStats& s = main.stats.stages[i];
    std::snprintf(text, sizeof text,
                  "%s\n    {\"name\": %s, \"count\": %llu, \"busy_s\": %.3f, \"failures\": %llu}",
                  i ? "," : "", json_string(s.name).c_str(), static_cast<unsigned long long>(s.count),
                  static_cast<double>(s.busy_ns) / 1e9, static_cast<unsigned long long>(s.failures));
    out += text;
  }
  std::snprintf(text, sizeof text,
                "\n  ],\n  \"queue\": {\"max\": %zu, \"mean_seen_by_consumer\": %.2f},\n"
                "  \"consumer_wait_s\": %.3f,\n",
                main.stats.queue.max, main.stats.queue.mean,
                static_cast<double>(main.stats.consumer_wait_ns) / 1e9);
  out += text;
  bool same = true;
  for (const Result& r : sweep) same = same && r.checksum == main.checksum;
  out += std::string("  \"checksums_equal\": ") + (same ? "true" : "false") + ",\n";
  out += "  \"sweep\": [";
  for (std::size_t i = 0; i < sweep.size(); ++i)
    out += (i ? ",\n    " : "\n    ") + point_json(sweep[i], efficiency[i]);
  out += sweep.empty() ? "]\n}\n" : "\n  ]\n}\n";
  std::FILE* file = std::fopen(config.json.c_str(), "w");
  if (file == nullptr) throw std::runtime_error("cannot write " + config.json);
  std::fwrite(out.data(), 1, out.size(), file);
  std::fclose(file);
}

}  // namespace

int main(int argc, char** argv) {
  const Config config = parse(argc, argv);
  try {
    const auto trace = config.trace.empty() ? nullptr : std::make_shared<conveyor::TraceRecorder>();
    std::vector<Result> sweep;
    std::vector<double> efficiency;
    Result main_run;
    if (config.sweep.empty()) {
      main_run = run(config, config.threads, trace);
    } else {
      std::printf("%8s %12s %11s %10s  %s\n", "threads", "images/s", "efficiency", "first (s)", "checksum");
      for (std::size_t i = 0; i < config.sweep.size(); ++i) {
        const bool last = i + 1 == config.sweep.size();
        sweep.push_back(run(config, config.sweep[i], last ? trace : nullptr));
        // Efficiency against the first point (1 thread in a 1,2,4,... sweep): ips(N) / (N / n0 * ips(n0)).
        const Result& base = sweep.front();
        efficiency.push_back(base.images_per_s > 0
                                 ? sweep.back().images_per_s * base.threads /
                                       (static_cast<double>(sweep.back().threads) * base.images_per_s)
                                 : 0.0);
        std::printf("%8d %12.1f %10.1f%% %10.3f  %s\n", sweep.back().threads, sweep.back().images_per_s,
                    100.0 * efficiency.back(), sweep.back().first_batch_s,
                    hex(sweep.back().checksum).c_str());
        std::fflush(stdout);
      }
      main_run = sweep.back();
    }
    std::printf(
        "threads %d: %.1f images/s steady after %llu warm-up batches (%.1f after the first batch, %.1f "
        "overall; %llu images, first batch after %.3f s), skipped %llu, checksum %s, peak RSS %.1f MB\n",
        main_run.threads, main_run.images_per_s, static_cast<unsigned long long>(main_run.warmup_batches),
        main_run.images_per_s_after_first_batch, main_run.images_per_s_overall,
        static_cast<unsigned long long>(main_run.images), main_run.first_batch_s,
        static_cast<unsigned long long>(main_run.stats.skipped),
        hex(main_run.checksum).c_str(), peak_rss_mb());
    std::printf("%s", conveyor::format_stats(main_run.stats).c_str());
    for (const Result& r : sweep)
      if (r.checksum != main_run.checksum)
        std::printf("WARNING: checksum differs at %d threads\n", r.threads);
    if (!config.json.empty()) write_json(config, main_run, sweep, efficiency);
    if (trace) trace->write_json(config.trace);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "pipeline_throughput: %s\n", error.what());
    return 1;
  }
  return 0;
}
