// train_step_bench: the training step alone, on random uint8 images already where the step reads them
// (device memory on a GPU), so only the step is measured: normalize on the GPU, forward, loss, backward,
// SGD. Warm-up (context, algorithm search, first-call costs) and the first real step are reported
// apart from the steady state; steady-state step times are CUDA events around each step (median, p95),
// and images/s is also given from the wall clock over all timed steps.
//
//   train_step_bench --model resnet18 --batch 256 --precision bf16 --steps 50 --warmup 10 [--unfused-bn]
//                    [--graph] [--device 0|cpu] [--size 224] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  bool fused = true, graph = false;
  std::string json;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(
      stderr,
      "%s\nusage: train_step_bench [--model resnet18|small_resnet] [--batch N] [--precision bf16|fp16|fp32]\n"
      "       [--steps N] [--warmup N] [--unfused-bn] [--graph] [--device N|cpu] [--size S] [--json FILE]\n",
      problem.c_str());
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(flag + " needs a value");
      return argv[++i];
    };
    try {
      if (flag == "--model")
        a.model = train::parse_model(value());
      else if (flag == "--batch")
        a.batch = std::stoi(value());
      else if (flag == "--precision")
        a.precision = train::parse_precision(value());
      else if (flag == "--steps")
        a.steps = std::stoi(value());
      else if (flag == "--warmup")
        a.warmup = std::stoi(value());
      else if (flag == "--size")
        a.size = std::stoi(value());
      else if (flag == "--unfused-bn")
        a.fused = false;
      else if (flag == "--graph")
        a.graph = true;
      else if (flag == "--json")
        a.json = value();
      else if (flag == "--device") {
        const std::string d = value();
        a.device = d == "cpu" ? -1 : std::stoi(d);
      } else
        usage("unknown option " + flag);
    } catch (const std::logic_error& e) {  // stoi
      usage(flag + ": " + e.what());
    }
  }
  if (a.batch < 1 || a.steps < 1 || a.warmup < 0) usage("batch and steps must be positive");
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
  Placement placement;
  placement.gpu = args.device >= 0;
  placement.device = args.device;
  DeviceFeeder feeder(placement, {.depth = 1});
  const DeviceBatch batch = feeder.stage(host.batch(n));

  train::Trainer trainer(o);
  auto start = Clock::now();
  trainer.warmup();
  const double warmup_s = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  trainer.step(batch);
  trainer.synchronize();
  const double first_step_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  for (int i = 0; i < args.warmup; ++i) trainer.step(batch);
  trainer.synchronize();
  const std::size_t before = trainer.step_times_ms().size();
  start = Clock::now();
  for (int i = 0; i < args.steps; ++i) trainer.step(batch);
  trainer.synchronize();
  const double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  const std::vector<double> all = trainer.step_times_ms();
  const std::vector<double> timed(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  const double median = percentile(timed, 0.5), p95 = percentile(timed, 0.95);
  const train::StepStats last = trainer.last_step();
  const double images_per_s = 1000.0 * args.batch / median;
  const double images_per_s_wall = static_cast<double>(args.batch) * args.steps / wall_s;

  std::printf("placement        %s\n", trainer.placement().c_str());
  std::printf("model            %s, batch %d, %dx%dx%d, %s, batch norm %s%s\n", train::to_string(args.model),
              args.batch, size, size, shape.channels, train::to_string(args.precision),
              args.fused ? "fused" : "unfused", args.graph ? ", CUDA graph" : "");
  std::printf(
      "warm-up          %.3f s (context, handles, allocations, algorithm search, one throwaway step)\n",
      warmup_s);
  std::printf("first step       %.2f ms\n", first_step_ms);
  std::printf(
      "steady state     median %.3f ms, p95 %.3f ms over %zu steps -> %.0f images/s (wall clock: %.0f "
      "images/s)\n",
      median, p95, timed.size(), images_per_s, images_per_s_wall);
  std::printf("last loss        %.4f\n", last.loss);
  if (!args.json.empty()) {
    std::ofstream out(args.json);
    out << "{\"bench\": \"train_step_bench\", \"commit\": \"" << CONVEYOR_GIT_COMMIT << "\", \"model\": \""
        << train::to_string(args.model) << "\", \"batch\": " << args.batch << ", \"size\": " << size
        << ", \"precision\": \"" << train::to_string(args.precision)
        << "\", \"fused_bn\": " << (args.fused ? "true" : "false")
        << ", \"graph\": " << (args.graph ? "true" : "false") << ", \"placement\": \"" << trainer.placement()
        << "\", \"warmup_s\": " << warmup_s << ", \"first_step_ms\": " << first_step_ms
        << ", \"steps\": " << timed.size() << ", \"step_ms_median\": " << median
        << ", \"step_ms_p95\": " << p95 << ", \"images_per_s\": " << images_per_s
        << ", \"images_per_s_wall\": " << images_per_s_wall << ", \"last_loss\": " << last.loss << "}\n";
    if (!out) throw IoError("cannot write " + args.json);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_step_bench: %s\n", e.what());
  return 1;
}
