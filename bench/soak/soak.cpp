// soak: runs the training input pipeline for a long time and records whether it stays healthy:
//   image_folder -> shuffle -> repeat -> decode_random_resized_crop(S) -> flip_horizontal(0.5)
//   -> distort(.4, .4, .4) -> batch(B) -> prefetch(4)
// Every few seconds it samples the images delivered and the resident memory; at the end it writes the
// time series (JSON and CSV) with a verdict: memory slope after warm-up (flat or growing) and throughput
// stability (the last quarter against the first). Not a test: a run takes minutes (default 10).
//
//   soak --data DIR [--minutes 10] [--interval 5] [--threads N] [--batch 256] [--size 224] [--seed 0]
//        [--on-error skip|fail] [--json FILE] [--csv FILE]        (--help says more)
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/record_commit.h"
#include "conveyor/batch_checksum.h"
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

// On --help prints the usage and exits 0; on a bad argument says why and exits 2.
Config parse(int argc, char** argv) {
  Config c;
  CLI::App app(
      "soak: runs the training input pipeline for minutes, sampling throughput and resident memory, and\n"
      "judges whether memory stays flat and throughput steady (exit 3 when memory grows).");
  app.add_option("--data", c.data, "ImageFolder root: one folder of JPEGs per class (required)");
  app.add_option("--minutes", c.minutes, "how long to run")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10'000.0));
  app.add_option("--interval", c.interval_s, "seconds between samples")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--threads", c.threads, "worker threads (0: all cores)")->check(CLI::Range(0, 4096));
  app.add_option("--batch", c.batch, "images per batch")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--size", c.size, "crop size in pixels")->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--seed", c.seed, "pipeline seed")->capture_default_str();
  std::string on_error = "skip";
  app.add_option("--on-error", on_error, "a file that fails to decode: skip it (a soak keeps going) or fail")
      ->capture_default_str()
      ->check(CLI::IsMember({"skip", "fail"}));
  app.add_option("--json", c.json, "write the samples and the verdict as JSON to FILE");
  app.add_option("--csv", c.csv, "write the samples as CSV to FILE");
  try {
    app.parse(argc, argv);
    // Checked here rather than with required(): CLI11 would report it before an unknown flag.
    if (c.data.empty()) throw CLI::RequiredError("--data");
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  c.on_error = on_error == "skip" ? conveyor::OnError::skip : conveyor::OnError::fail;
  return c;
}

double resident_mb() {
  std::ifstream statm("/proc/self/statm");
  unsigned long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
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
  conveyor::BatchChecksum checksum;  // reads every byte, as a consumer would
  Clock::time_point last = start;
  while (Clock::now() < end) {
    batch = it.next();
    if (!batch) throw std::runtime_error("the endless pipeline ended");
    images += batch->size();
    checksum.add(*batch);
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
  std::printf("soak: %s (checksum %s)\n", soak::describe(verdict).c_str(), checksum.hex().c_str());

  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const nlohmann::ordered_json run = {{"benchmark", "soak"},
                                      {"commit", conveyor::bench::recorded_commit()},
                                      {"host", host},
                                      {"cores", std::thread::hardware_concurrency()},
                                      {"started", started},
                                      {"data", c.data},
                                      {"images_in_folder", folder.source_size()},
                                      {"threads", threads},
                                      {"batch", c.batch},
                                      {"size", c.size},
                                      {"minutes", c.minutes},
                                      {"interval_s", c.interval_s},
                                      {"images", images},
                                      {"checksum", checksum.hex()}};
  // The data path need not be UTF-8: a byte that is not becomes U+FFFD rather than an exception.
  if (!c.json.empty())
    write_text(c.json, soak::to_json(run, samples, verdict)
                               .dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                           "\n");
  if (!c.csv.empty()) write_text(c.csv, soak::to_csv(samples));
  return verdict.memory_flat ? 0 : 3;
} catch (const std::exception& error) {
  std::fprintf(stderr, "soak: %s\n", error.what());
  return 1;
}
