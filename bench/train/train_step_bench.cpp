// train_step_bench: the training step alone, on random uint8 images already where the step reads them
// (device memory on a GPU), so only the step is measured: normalize on the GPU, forward, loss, backward,
// SGD (replayed as one CUDA graph unless --no-graph). Warm-up (context, algorithm choice, first-call
// costs, graph capture; its parts and what the cuDNN algorithm cache gave are printed) and the first real
// step are reported apart from the steady state; steady-state step times are CUDA events around each step
// (median, p95), and images/s is also given from the wall clock over all timed steps. For a training loop's
// rate counted from its first batch (feed_vs_prefetch's images_per_s), the same step's figure is
// images_per_s_from_first_step: every step from the first one on, over the time from its start to the
// last one's end (the warm-up before it reported apart).
//
//   train_step_bench --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 10 [--unfused-bn]
//                    [--no-graph] [--device 0|cpu] [--size 224] [--json FILE]     (--help says more)
// The algorithm cache is the Trainer's: $CONVEYOR_ALGORITHM_CACHE names its folder (or "off").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "bench/record_commit.h"
#include "conveyor/batch.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/error.h"
#include "conveyor/random.h"
#include "conveyor/train/trainer.h"

namespace {

using namespace conveyor;
using Clock = std::chrono::steady_clock;

struct Args {
  train::ModelKind model = train::ModelKind::resnet18;
  int batch = 256, steps = 50, warmup = 10, size = 0, device = 0;
  train::Precision precision = train::Precision::bf16;
  bool fused = true, graph = true;
  std::string json;
};

// On --help prints the usage and exits 0; on a bad argument says why and exits 2.
Args parse(int argc, char** argv) {
  Args a;
  std::string model = "resnet18", precision = "bf16", device = "0";
  bool unfused = false, eager = false;
  CLI::App app(
      "train_step_bench: the training step alone (normalize, forward, loss, backward, SGD, replayed as a\n"
      "CUDA graph) on random images already where the step reads them; warm-up (its parts and the cuDNN\n"
      "algorithm cache: $CONVEYOR_ALGORITHM_CACHE names its folder, or off) and the first step are\n"
      "reported apart.");
  app.add_option("--model", model, "the network")
      ->capture_default_str()
      ->check(CLI::IsMember({"resnet18", "small_resnet"}));
  app.add_option("--batch", a.batch, "images per step")->capture_default_str()->check(CLI::Range(1, 65536));
  app.add_option("--precision", precision, "arithmetic of the step")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  app.add_option("--steps", a.steps, "timed steps")->capture_default_str()->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", a.warmup, "untimed steps after the first")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--unfused-bn", unfused, "batch norm as separate mean, variance and normalize steps");
  app.add_flag("--no-graph", eager, "run the step eagerly (default: replayed as one CUDA graph)");
  bool graph_flag = false;  // the default; the flag stays so that older command lines still run
  app.add_flag("--graph", graph_flag, "the default: the step replayed as one CUDA graph");
  app.add_option("--device", device, "GPU index, or cpu for the CPU reference")
      ->capture_default_str()
      ->check(CLI::IsMember({"cpu"}) | CLI::Range(0, 1024));
  app.add_option("--size", a.size, "input size (0: 224 for resnet18, 28 for small_resnet)")
      ->check(CLI::Range(0, 4096));
  app.add_option("--json", a.json, "write the results as JSON to FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error) == 0 ? 0 : 2);  // --help: 0; a usage error: its message and 2
  }
  a.model = train::parse_model(model);
  a.precision = train::parse_precision(precision);
  a.fused = !unfused;
  a.graph = !eager;
  a.device = device == "cpu" ? -1 : std::stoi(device);
  return a;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5))];
}

}  // namespace

int main(int argc, char** argv) try {
  const Args args = parse(argc, argv);
  const bool resnet18 = args.model == train::ModelKind::resnet18;
  const int size = args.size ? args.size : resnet18 ? 224 : 28;
  const ImageShape shape{size, size, resnet18 ? 3 : 1};

  train::TrainerOptions o;
  o.model = args.model;
  o.num_classes = resnet18 ? 1000 : 10;
  o.input = shape;
  o.batch = args.batch;
  o.precision = args.precision;
  o.fused_batch_norm = args.fused;
  o.device = args.device;
  o.cuda_graph = args.graph;
  o.mean = {123.675f, 116.28f, 103.53f};
  o.std = {58.395f, 57.12f, 57.375f};

  // Random pixels and labels, fixed for the run, staged once where the trainer reads them (on the GPU for
  // a GPU run) and held for the whole run.
  const auto n = static_cast<std::size_t>(args.batch);
  PageableBatchBuffer host(n, shape);
  Rng rng(42);
  for (std::size_t i = 0; i < n; ++i) {
    const ImageView image = host.slot(i);
    for (std::size_t b = 0; b < shape.bytes(); ++b) image.data[b] = static_cast<std::uint8_t>(rng.below(256));
    host.labels()[i] = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(o.num_classes)));
  }
  // The trainer first: its stream reads the batch (conveyor::cuda::read_on), and a reader stream must live
  // until the batch is released, so the batch (declared after it) goes first.
  train::Trainer trainer(o);
  Placement placement;
  placement.gpu = args.device >= 0;
  placement.device = args.device;
  DeviceFeeder feeder(placement, {.depth = 1, .normalize = std::nullopt});
  const DeviceBatch batch = feeder.stage(host.batch(n));

  auto start = Clock::now();
  trainer.warmup();
  const double warmup_s = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  const auto first_step_start = start;
  trainer.step(batch);
  trainer.synchronize();
  const double first_step_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  for (int i = 0; i < args.warmup; ++i) trainer.step(batch);
  trainer.synchronize();
  const std::size_t before = trainer.step_times_ms().size();
  start = Clock::now();
  for (int i = 0; i < args.steps; ++i) trainer.step(batch);
  trainer.synchronize();
  const auto end = Clock::now();
  const double wall_s = std::chrono::duration<double>(end - start).count();
  const double images_per_s_from_first_step = static_cast<double>(args.batch) * (1 + args.warmup + args.steps) /
                                              std::chrono::duration<double>(end - first_step_start).count();
  const std::vector<double> all = trainer.step_times_ms();
  const std::vector<double> timed(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  const double median = percentile(timed, 0.5), p95 = percentile(timed, 0.95);
  const train::StepStats last = trainer.last_step();
  const double images_per_s = 1000.0 * args.batch / median;
  const double images_per_s_wall = static_cast<double>(args.batch) * args.steps / wall_s;

  std::printf("placement        %s\n", trainer.placement().c_str());
  const train::WarmupReport& w = trainer.warmup_report();
  const auto& cache = w.algorithm_cache;
  std::printf("model            %s, batch %d, %dx%dx%d, %s, batch norm %s, %s\n",
              train::to_string(args.model), args.batch, size, size, shape.channels,
              train::to_string(args.precision), args.fused ? "fused" : "unfused",
              w.graph                     ? "step replayed as a CUDA graph"
              : !w.graph_fallback.empty() ? "eager (graph capture failed)"
              : args.graph                ? "eager (no graphs on the CPU)"
                                          : "eager (--no-graph)");
  std::printf(
      "warm-up          %.3f s: context and handles %.3f, allocations and algorithms %.3f (classifier "
      "products %.3f, beside the convolutions when nothing is timed), throwaway step %.3f, graph capture "
      "%.3f\n",
      warmup_s, w.context_seconds, w.prepare_seconds, w.classifier_seconds, w.first_step_seconds,
      w.capture_seconds);
  if (!cache.file.empty())
    std::printf("algorithm cache  %zu shapes reused, %zu searched, %zu rejected, %zu warnings (%s)\n",
                cache.reused, cache.searched, cache.rejected, cache.warnings, cache.file.c_str());
  for (const std::string& m : cache.messages) std::printf("                 %s\n", m.c_str());
  if (!w.graph_fallback.empty()) std::printf("graph fallback   %s\n", w.graph_fallback.c_str());
  std::printf("first step       %.2f ms; from it on, every step: %.0f images/s\n", first_step_ms,
              images_per_s_from_first_step);
  std::printf(
      "steady state     median %.3f ms, p95 %.3f ms over %zu steps -> %.0f images/s (wall clock: %.0f "
      "images/s)\n",
      median, p95, timed.size(), images_per_s, images_per_s_wall);
  std::printf("last loss        %.4f\n", last.loss);
  if (!args.json.empty()) {
    const nlohmann::ordered_json out = {
        {"bench", "train_step_bench"},
        {"commit", conveyor::bench::recorded_commit()},
        {"model", train::to_string(args.model)},
        {"batch", args.batch},
        {"size", size},
        {"precision", train::to_string(args.precision)},
        {"fused_bn", args.fused},
        {"graph", w.graph},
        {"graph_asked", args.graph},
        {"placement", trainer.placement()},
        {"warmup_s", warmup_s},
        {"warmup_context_s", w.context_seconds},
        {"warmup_prepare_s", w.prepare_seconds},
        {"warmup_classifier_s", w.classifier_seconds},
        {"warmup_first_step_s", w.first_step_seconds},
        {"warmup_capture_s", w.capture_seconds},
        {"algorithm_cache_reused", cache.reused},
        {"algorithm_cache_searched", cache.searched},
        {"algorithm_cache_rejected", cache.rejected},
        {"algorithm_cache_warnings", cache.warnings},
        {"first_step_ms", first_step_ms},
        {"steps", timed.size()},
        {"step_ms_median", median},
        {"step_ms_p95", p95},
        {"images_per_s", images_per_s},
        {"images_per_s_wall", images_per_s_wall},
        {"images_per_s_from_first_step", images_per_s_from_first_step},
        {"last_loss", last.loss}};  // NaN (a diverged step) is written as null
    std::ofstream file(args.json, std::ios::binary | std::ios::trunc);
    file << out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
    if (!file.flush()) throw IoError("cannot write " + args.json);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_step_bench: %s\n", e.what());
  return 1;
}
