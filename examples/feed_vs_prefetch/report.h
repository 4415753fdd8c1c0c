// Printing and saving what feed_vs_prefetch measured.
#pragma once

#include <string>
#include <vector>

#include "modes.h"

namespace feed_vs_prefetch {

struct RunInfo {
  std::string device;  // the placement's description
  std::string model;
  std::string precision;
  std::string data;
  std::string date;  // UTC, ISO 8601
  std::string host;
  int threads = 0, batch = 0, size = 0, steps = 0, images = 0;
  int world_size = 1, rank = 0;  // data parallel: ranks in the job (one GPU, or the CPU, each), this one
  bool deterministic = false;
  // prefetch on a GPU: the hybrid split's share (where it starts when the pipeline is not deterministic).
  double gpu_share = 0;
  bool pipeline_deterministic = false;
  bool hardware_pipelining = false;
  // prefetch: PipelineOptions::worker_nice, the library's default unless given
  int pipeline_nice = conveyor::PipelineOptions{}.worker_nice;
  bool cuda_graph = true;           // on a GPU: feed and parallel replay the step as one CUDA graph
  bool prefetch_cuda_graph = true;  // on a GPU: prefetch does (false: kernel by kernel, beside nvJPEG)
  // prefetch, issue 36's levers (options.h)
  bool feeder_warmup = true, remember_split = true, hardware_pool = true;
  std::string cpus = "gpu";
  int kernel_blocks = 0;
  // prefetch, issue 41's levers (options.h), and this rank's place on its host
  bool memory_near_gpu = true, start_at_once = true, gpu_hybrid = true, copy_whole_batch = true;
  std::string step_priority = "default";
  int local_rank = 0, local_world_size = 1;
  bool resident = false;  // prefetch: the timed steps on the last warm-up batch (no input)
};

// One table: images/s, step time median and p95, the split of a step, idle fractions, speed-up over feed.
std::string format_table(const RunInfo& info, const std::vector<ModeResult>& results);

// {"device": ..., "threads": ..., "batch": ..., "results": [{"mode": ..., "images_per_s": ...}, ...]}
void write_json(const std::string& path, const RunInfo& info, const std::vector<ModeResult>& results);

}  // namespace feed_vs_prefetch
