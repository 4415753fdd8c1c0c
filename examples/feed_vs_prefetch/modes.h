// The three ways of feeding the same training step that feed_vs_prefetch compares.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/cuda/device_feeder.h"
#include "conveyor/dataset.h"
#include "conveyor/image.h"
#include "conveyor/ranks.h"
#include "conveyor/sample.h"
#include "conveyor/trace.h"
#include "conveyor/train/trainer.h"
#include "options.h"

namespace feed_vs_prefetch {

// Everything the modes share, so that only the scheduling differs between them.
struct Setup {
  // The command line, its defaults resolved for the placement (batch, steps, warm-up steps, threads: the
  // parallel map's, all cores for 0): the levers each mode reads as the user set them.
  Options options;
  std::vector<std::string> paths;  // in the order every mode reads them (already shuffled)
  std::vector<std::int64_t> labels;
  std::vector<conveyor::SampleOp> ops;  // decode + augment, the same seeds in every mode
  conveyor::ImageShape shape;           // of one augmented sample
  conveyor::Placement placement;        // where the step runs: a GPU, or the CPU
  // This process's place among the ranks a launcher started (rank 0 of 1 when run alone): with several,
  // prefetch trains data-parallel, each rank on its share of the data (one GPU, or the CPU, per process).
  conveyor::Ranks ranks;
  conveyor::train::TrainerOptions trainer;
  // prefetch: TrainerOptions::cuda_graph for its trainer (feed and parallel take trainer's). nvJPEG's
  // hardware decoding seems to wait for a replayed graph to end; kernels launched one by one left the GPU
  // less idle (bench/results/2026-11-27-h100-run19-step-graph/).
  bool prefetch_graph = true;
  int pipeline_threads = 0;  // prefetch: the pipeline's (0: the feeder chooses, cores - 1 for a CPU step)
  // prefetch: the split remembered under memory_key (DeviceDecode::remember_share); the pipeline's CPUs from
  // --cpus (empty: all, or the feeder's own choice close to its GPU when cpus_near_gpu, --cpus gpu).
  std::string memory_key;
  std::vector<int> pipeline_cpus;
  bool cpus_near_gpu = true;

  // Called after each step (warm-up steps included), for a progress bar; may be empty.
  std::function<void()> on_step;

  bool data_parallel() const { return ranks.world_size > 1; }
};

// What one mode measured. images_per_s, the headline, is counted from the first batch: every step's images
// over the time from the first batch's arrival to the last step's end (the time to the first batch and the
// trainer's warm-up reported apart); the other figures are over the timed steps, after the warm-up steps.
struct ModeResult {
  std::string mode;
  double images_per_s = 0;
  double images_per_s_after_warmup_steps = 0;  // over the timed steps only (the headline before 2026-11-27)
  double step_ms_median = 0, step_ms_p95 = 0;
  // Median split of one step into waiting for (or making) the batch, copying it, and computing.
  double data_wait_ms = 0, copy_ms = 0, compute_ms = 0;
  // Over the whole timed run: the share of wall time the training thread waited for data, and the share
  // the device sat idle (GPU: from CUDA events; CPU: time the training thread was not computing).
  double data_wait_fraction = 0, idle_fraction = 0;
  double warmup_s = 0;       // trainer.warmup(): context, algorithm search, allocations
  double first_batch_s = 0;  // from the start of the mode to its first batch being ready
  double first_step_s = 0;   // the first step after warm-up, whole (data + copy + compute)
  double loss_last = 0;
  // prefetch only: the pipeline's threads, where the feeder's work ran, the share of images nvJPEG decoded.
  int pipeline_threads = 0;
  std::string feeder;
  double gpu_decoded_fraction = 0;
  conveyor::FeederStats feeder_stats;  // prefetch: the feeder at the end (warm-up steps included)
  double feeder_warmup_s = 0;          // prefetch: DeviceFeeder::warmup
  std::string split_memory;            // prefetch: the split: where it started, where it was kept
  std::uint64_t stall_reports = 0;     // prefetch: reports the ProgressWatch wrote
  std::vector<double> losses;          // prefetch with record_loss: every step's loss, warm-up steps included
  // The untimed warm-up steps' waits for their batch, in order: the start, step by step.
  std::vector<double> warmup_waits_ms;
  std::vector<conveyor::SourcePart> source_parts;  // prefetch from a data service: who made the batches
};

// Runs `mode` ("feed", "parallel" or "prefetch"). With a recorder, the training thread, the copies and
// the pipeline's workers appear on their own tracks.
ModeResult run_mode(const std::string& mode, const Setup& setup,
                    const std::shared_ptr<conveyor::TraceRecorder>& trace);

}  // namespace feed_vs_prefetch
