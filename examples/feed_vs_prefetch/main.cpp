// feed_vs_prefetch: what a multithreaded, prefetching input pipeline gains over feeding each step by
// hand, measured on your data and machine. Same data, model, augmentation and seeds in every mode; only
// the scheduling differs. See --help.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <sstream>
#include <thread>

#include "conveyor/cuda/device.h"
#include "conveyor/dataset.h"
#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/random.h"
#include "conveyor/ranks.h"
#include "conveyor/trace.h"
#include "conveyor/train/trainer.h"
#include "modes.h"
#include "options.h"
#include "plot_script.h"
#include "progress_bar.h"
#include "rank_placement.h"
#include "report.h"

namespace fvp = feed_vs_prefetch;

namespace {

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string host_name() {
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  return name;
}

// Every image of the folder in one shuffled order that all modes read.
void list_images(const std::string& root, std::uint64_t seed, fvp::Setup& setup) {
  const conveyor::Dataset folder = conveyor::Dataset::image_folder(root);
  const std::size_t n = folder.source_size();
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  conveyor::Rng rng(seed, /*stream=*/0x5f0);
  for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  for (const std::size_t i : order) {
    setup.paths.emplace_back(folder.source_path(i));
    setup.labels.push_back(folder.source_label(i));
  }
}

// --cpus: the pipeline's CPUs. "gpu" and "all": an empty list (the feeder chooses the CPUs close to its GPU,
// or lets the pipeline run wherever the process runs: Setup::cpus_near_gpu); "auto": local rank r of the
// host's R the r-th share of the process's CPUs; a list ("0-15", "0,2,4-7") as given.
std::vector<int> pipeline_cpus(const std::string& spec, const conveyor::Ranks& ranks) {
  if (spec == "all" || spec == "gpu") return {};
  if (spec == "auto") return conveyor::cpu_share(ranks.local_rank, ranks.local_world_size);
  std::vector<int> listed;
  std::stringstream items(spec);
  for (std::string item; std::getline(items, item, ',');) {
    const std::size_t dash = item.find('-');
    try {
      const int first = std::stoi(item.substr(0, dash));
      const int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
      for (int cpu = first; cpu <= last; ++cpu) listed.push_back(cpu);
    } catch (const std::exception&) {
      throw conveyor::InvalidArgument("--cpus: '" + item + "' is not a CPU or a range such as 0-15");
    }
  }
  if (listed.empty()) throw conveyor::InvalidArgument("--cpus: no CPU listed");
  return listed;
}

// With several ranks each writes its own file: "out.json" -> "out.rank1.json".
std::string per_rank(const std::string& path, const conveyor::Ranks& ranks) {
  if (path.empty() || ranks.world_size == 1) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() /
          (p.stem().string() + ".rank" + std::to_string(ranks.rank) + p.extension().string()))
      .string();
}

}  // namespace

int main(int argc, char** argv) try {
  // Line by line even into a pipe: under a launcher the ranks' lines interleave in one log, and a rank
  // that is stopped must not take its last lines with it.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  fvp::Options options = fvp::parse_options(argc, argv);
  // Under a launcher (scripts/launch.sh, torchrun, mpirun, srun) this process is one rank of a data-parallel
  // job: one GPU per process, its local rank's, or CPU processes training through MPI.
  const conveyor::Ranks ranks = conveyor::ranks_from_environment();
  const bool data_parallel = ranks.world_size > 1;
  if (data_parallel) {
    if (!options.modes_given) options.modes = {"prefetch"};
    if (options.modes != std::vector<std::string>{"prefetch"})
      throw conveyor::InvalidArgument("data parallel (several ranks) runs the prefetch mode only");
  }
  const conveyor::Placement placement = example_support::rank_placement(options.device, ranks);
  const bool gpu = placement.gpu;
  if (options.model.empty()) options.model = gpu ? "resnet18" : "small";
  if (options.size == 0) options.size = options.model == "resnet18" ? 224 : gpu ? 64 : 32;
  // The CPU reference is slow: on the CPU a narrow, shallow model keeps a step in the range of the work of
  // making its batch, which is what the comparison is about.
  if (options.width == 0) options.width = gpu ? 32 : 4;
  if (options.batch == 0) options.batch = gpu ? 256 : 32;
  if (options.steps == 0) options.steps = gpu ? 50 : 6;
  if (options.warmup == 0) options.warmup = gpu ? 3 : 1;
  // The pipeline of prefetch takes what was asked, or lets the feeder choose (0); the parallel map all cores.
  const int pipeline_threads = options.threads;
  if (options.threads == 0) options.threads = static_cast<int>(std::thread::hardware_concurrency());

  fvp::Setup setup;
  setup.options = options;
  setup.placement = placement;
  setup.ranks = ranks;
  setup.pipeline_threads = pipeline_threads;
  setup.pipeline_cpus = pipeline_cpus(options.cpus, ranks);
  setup.cpus_near_gpu = options.cpus == "gpu";
  if (!std::filesystem::is_directory(options.data))
    throw conveyor::IoError("no data folder '" + options.data +
                            "' (./conveyor.sh demo makes the demo data; or pass --data DIR)");
  list_images(options.data, options.seed, setup);
  setup.shape = {options.size, options.size, 3};
  setup.ops = {conveyor::ops::decode_random_resized_crop(options.size), conveyor::ops::flip_horizontal(0.5),
               conveyor::ops::distort({.brightness = 0.4, .contrast = 0.4, .saturation = 0.4})};

  auto& trainer = setup.trainer;
  trainer.model = options.model == "resnet18" ? conveyor::train::ModelKind::resnet18
                                              : conveyor::train::ModelKind::small_resnet;
  trainer.num_classes =
      std::max<int>(2, static_cast<int>(*std::max_element(setup.labels.begin(), setup.labels.end())) + 1);
  trainer.input = setup.shape;
  trainer.batch = options.batch;
  trainer.precision = options.precision == "fp32"   ? conveyor::train::Precision::fp32
                      : options.precision == "fp16" ? conveyor::train::Precision::fp16
                                                    : conveyor::train::Precision::bf16;
  trainer.device = gpu ? placement.device : -1;
  trainer.seed = options.seed;
  trainer.width = options.width;
  trainer.blocks_per_stage = gpu ? 2 : 1;
  trainer.deterministic = options.deterministic;
  trainer.cuda_graph = !options.no_graph;
  trainer.urgent_stream = options.step_priority == "urgent";
  // nvJPEG's hardware decoding seems to wait for a replayed graph to end: prefetch fed the step 1.2 % faster
  // without the graph when nvJPEG decodes beside it (median of six pairs, runs 19 and 20). A rank of several
  // replays it all the same: launched kernel by kernel, its step waits for every host delay of either rank
  // (each all-reduce joins them), and two H200s scaled 1.07x better with the graph (2026-11-29,
  // bench/results/2026-11-29-h200x2-hardware-queues).
  const bool nvjpeg_beside_step = gpu && options.device_augment && options.gpu_decode;
  setup.prefetch_graph =
      options.graph || (!options.no_graph && (!nvjpeg_beside_step || ranks.world_size > 1));
  // What moves the hybrid split's balance besides what the feeder sees: the step beside it and how many
  // ranks share the host.
  setup.memory_key = "feed_vs_prefetch " + options.model + " " + options.precision + " graph " +
                     std::to_string(setup.prefetch_graph) + " replicas on the host " +
                     std::to_string(ranks.local_world_size) + " cpus " + options.cpus;

  const std::vector<conveyor::StagePlacement> stages = {
      {"read + decode + augment",
       "cpu, " + std::to_string(options.threads) + " threads (parallel); prefetch: see its line below"},
      {"copy to device",
       gpu ? "gpu:" + std::to_string(placement.device) + " copy stream" : "none (host memory)"},
      {"training step",
       gpu ? "gpu:" + std::to_string(placement.device) + " (cuDNN, cuBLAS)" : "cpu reference"}};
  std::printf("%s\n", conveyor::describe_placement(placement, stages).c_str());
  if (data_parallel) std::printf("data parallel: rank %d of %d\n", ranks.rank, ranks.world_size);

  if (!options.trace_dir.empty()) std::filesystem::create_directories(options.trace_dir);
  std::vector<fvp::ModeResult> results;
  const bool progress = options.progress < 0 ? example_support::ProgressBar::wanted() && ranks.is_main()
                                             : options.progress == 1;
  for (const auto& mode : options.modes) {
    std::printf("running %s ...\n", mode.c_str());
    std::fflush(stdout);
    std::shared_ptr<conveyor::TraceRecorder> trace;
    if (!options.trace_dir.empty()) trace = std::make_shared<conveyor::TraceRecorder>();
    example_support::ProgressBar bar(mode, options.warmup + options.steps, progress);
    setup.on_step = [&bar] { bar.advance(); };
    results.push_back(fvp::run_mode(mode, setup, trace));
    setup.on_step = nullptr;
    if (trace) trace->write_json(std::filesystem::path(options.trace_dir) / (mode + ".trace.json"));
  }

  const fvp::RunInfo info{setup, utc_now(), host_name()};
  std::printf("\n%s", fvp::format_table(info, results).c_str());
  const std::string json = per_rank(options.json, ranks);
  if (!json.empty()) fvp::write_json(json, info, results);
  if (!options.plot.empty() && ranks.is_main()) {  // the command line made sure --json was given too
    example_support::plot("plot_feed_vs_prefetch.py", json, options.plot);
    std::printf("plot: %s\n", options.plot.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "feed_vs_prefetch: %s\n", e.what());
  return 1;
}
