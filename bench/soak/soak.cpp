// soak: runs the training input pipeline for a long time and records whether it stays healthy:
//   image_folder -> shuffle -> repeat -> decode_random_resized_crop(S) -> flip_horizontal(0.5)
//   -> distort(.4, .4, .4) -> batch(B) -> prefetch(4)
// Every few seconds it samples the images delivered and the resident memory; at the end it writes the
// time series (JSON and CSV) with a verdict: memory slope after warm-up (flat or growing) and throughput
// stability (the last quarter against the first). Not a test: a run takes minutes (default 10).
//
//   soak --data DIR [--minutes 10] [--interval 5] [--threads N] [--batch 256] [--size 224] [--seed 0]
//        [--on-error skip|fail] [--json FILE] [--csv FILE]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/ops.h"
#include "soak_report.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  std::string data, json, csv;
  double minutes = 10, interval_s = 5;
  int threads = 0, size = 224;
  std::size_t batch = 256;
  std::uint64_t seed = 0;
  conveyor::OnError on_error = conveyor::OnError::skip;  // a soak keeps going over the odd bad file
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "soak: %s\nusage: soak --data DIR [--minutes 10] [--interval 5] [--threads N] [--batch 256]\n"
               "            [--size 224] [--seed 0] [--on-error skip|fail] [--json FILE] [--csv FILE]\n",
               problem.c_str());
  std::exit(2);
}

double number(const std::string& flag, const char* text, double lo, double hi) {
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !(value >= lo && value <= hi))
    usage("bad value for " + flag + ": " + text);
  return value;
}

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h")
      usage("runs the pipeline for minutes, sampling throughput and memory");
    if (i + 1 >= argc) usage(flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "--data")
      c.data = value;
    else if (flag == "--minutes")
      c.minutes = number(flag, value, 0.01, 10'000);
    else if (flag == "--interval")
      c.interval_s = number(flag, value, 0.1, 3600);
    else if (flag == "--threads")
      c.threads = static_cast<int>(number(flag, value, 0, 4096));
    else if (flag == "--batch")
      c.batch = static_cast<std::size_t>(number(flag, value, 1, 65536));
    else if (flag == "--size")
      c.size = static_cast<int>(number(flag, value, 1, 4096));
    else if (flag == "--seed")
      c.seed = static_cast<std::uint64_t>(number(flag, value, 0, 1e18));
    else if (flag == "--json")
      c.json = value;
    else if (flag == "--csv")
      c.csv = value;
    else if (flag == "--on-error") {
      const std::string mode = value;
      if (mode != "skip" && mode != "fail") usage("--on-error is skip or fail");
      c.on_error = mode == "skip" ? conveyor::OnError::skip : conveyor::OnError::fail;
    } else
      usage("unknown option " + flag);
  }
  if (c.data.empty()) usage("--data DIR is required (an ImageFolder tree of JPEGs)");
  return c;
}

double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  unsigned long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) try {
  const Config c = parse(argc, argv);
  const int threads = c.threads > 0 ? c.threads : static_cast<int>(std::thread::hardware_concurrency());
  const conveyor::Dataset folder = conveyor::Dataset::image_folder(c.data);
  const conveyor::BatchedDataset batches =
      folder.shuffle(folder.source_size(), c.seed)
          .repeat()
          .map(conveyor::ops::decode_random_resized_crop(c.size))
          .map(conveyor::ops::flip_horizontal(0.5))
          .map(conveyor::ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4}))
          .with_options({.threads = threads, .on_error = c.on_error, .seed = c.seed})
          .batch(c.batch)
          .prefetch(4);
  std::printf("soak: %zu images in %s, %d threads, batch %zu, size %d, for %.1f min\n", folder.source_size(),
              c.data.c_str(), threads, c.batch, c.size, c.minutes);
  std::fflush(stdout);

  const std::string started = utc_now();
  conveyor::BatchIterator it = batches.begin();
  std::optional<conveyor::Batch> batch = it.next();  // the first batch (listing, probe, pool) is warm-up
  if (!batch) throw std::runtime_error("the pipeline delivered nothing");
  batch.reset();
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(60 * c.minutes));
  const auto interval =
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(c.interval_s));
  std::vector<soak::Sample> samples;
  std::uint64_t images = 0, images_at_last = 0;
  std::uint64_t checksum = 0;  // touch the pixels, as a consumer would
  Clock::time_point last = start;
  while (Clock::now() < end) {
    batch = it.next();
    if (!batch) throw std::runtime_error("the endless pipeline ended");
    images += batch->size();
    checksum += batch->pixels()[batch->pixels().size() / 2];
    batch.reset();
    const Clock::time_point now = Clock::now();
    if (now - last < interval) continue;
    const conveyor::PipelineStats stats = it.stats();
    const double seconds = std::chrono::duration<double>(now - last).count();
    samples.push_back({std::chrono::duration<double>(now - start).count(), images,
                       static_cast<double>(images - images_at_last) / seconds, resident_mb(),
                       stats.pool_buffers, stats.skipped});
    const soak::Sample& s = samples.back();
    std::printf("  t=%7.1f s  %9.1f img/s  rss %8.1f MB  pool %llu  skipped %llu\n", s.t_s, s.images_per_s,
                s.resident_mb, static_cast<unsigned long long>(s.pool_buffers),
                static_cast<unsigned long long>(s.skipped));
    std::fflush(stdout);
    images_at_last = images;
    last = now;
  }
  const soak::Verdict verdict = soak::judge(samples);
  std::printf("soak: %s (checksum byte sum %llu)\n", soak::describe(verdict).c_str(),
              static_cast<unsigned long long>(checksum));

  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string run =
      "  \"benchmark\": \"soak\", \"commit\": " + json_string(CONVEYOR_GIT_COMMIT) +
      ", \"host\": " + json_string(host) +
      ", \"cores\": " + std::to_string(std::thread::hardware_concurrency()) +
      ", \"started\": " + json_string(started) + ",\n  \"data\": " + json_string(c.data) +
      ", \"images_in_folder\": " + std::to_string(folder.source_size()) +
      ", \"threads\": " + std::to_string(threads) + ", \"batch\": " + std::to_string(c.batch) +
      ", \"size\": " + std::to_string(c.size) + ", \"minutes\": " + std::to_string(c.minutes) +
      ", \"interval_s\": " + std::to_string(c.interval_s) + ", \"images\": " + std::to_string(images);
  if (!c.json.empty()) write_text(c.json, soak::to_json(run, samples, verdict));
  if (!c.csv.empty()) write_text(c.csv, soak::to_csv(samples));
  return verdict.memory_flat ? 0 : 3;
} catch (const std::exception& error) {
  std::fprintf(stderr, "soak: %s\n", error.what());
  return 1;
}
