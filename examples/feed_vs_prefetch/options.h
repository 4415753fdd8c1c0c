// Command line of feed_vs_prefetch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/dataset.h"

namespace feed_vs_prefetch {

struct Options {
  std::string data;  // ImageFolder root
  std::vector<std::string> modes{"feed", "parallel", "prefetch"};
  bool modes_given = false;  // --modes was on the command line
  int threads = 0;           // 0: all cores
  int batch = 0;             // 0: 256 on a GPU, 32 on the CPU
  int steps = 0;             // timed steps per mode; 0: 50 on a GPU, 6 on the CPU
  int warmup = 0;            // untimed steps per mode; 0: 3 on a GPU, 1 on the CPU
  std::string model;         // small | resnet18; "": resnet18 on a GPU, small on the CPU
  int size = 0;              // crop size; 0: 224 for resnet18, 64 for small
  int width = 0;             // small: channels of its first stage; 0: 32 on a GPU, 8 on the CPU
  std::string device = "auto";
  std::string precision = "bf16";
  std::string trace_dir;
  std::string plot;
  std::string json;
  int progress = -1;  // a bar per mode on stderr: 1 on, 0 off, -1 when stderr is a terminal
  std::uint64_t seed = 42;
  // prefetch on a GPU: where the work after the pipeline runs.
  bool device_augment = true;  // flip and distort on the GPU, fused with the normalize that makes the input
  bool gpu_decode = true;      // hybrid decoding: nvJPEG decodes gpu_share of the images
  double gpu_share = 0.5;
  // prefetch: the pipeline's deterministic option. false (the default here, unless --deterministic or
  // --record-loss): the hybrid split adapts its share and the batches depend on timing; true: the same
  // batches every run, at the share set.
  bool pipeline_deterministic = false;
  bool hardware_pipelining = false;  // DeviceDecode::hardware_pipelining
  bool deterministic = false;        // deterministic convolution algorithms (TrainerOptions::deterministic)
  // On a GPU, the step replayed as one CUDA graph (--graph) or launched kernel by kernel (--no-graph).
  // Neither: kernel by kernel in prefetch when nvJPEG decodes beside the step, a graph otherwise.
  bool graph = false, no_graph = false;
  bool record_loss = false;  // prefetch: every step's loss in the JSON (synchronises after each step)
  // prefetch: PipelineOptions::worker_nice, the library's default unless given
  int pipeline_nice = conveyor::PipelineOptions{}.worker_nice;
  // issue 36, each a lever that a run can turn off to measure it against its baseline:
  bool feeder_warmup = true;   // prefetch: DeviceFeeder::warmup after the trainer's warm-up
  bool remember_split = true;  // DeviceDecode::remember_share
  bool hardware_pool = true;   // DeviceDecode::hardware_pool
  // prefetch: the pipeline's CPUs: gpu (the library's default: a rank's share of the CPUs close to its GPU
  // when several ranks share the host), all, auto (this rank's even share of the host), or a list
  std::string cpus = "gpu";
  double stall_seconds = 60;   // ProgressWatch limit: report what every thread waits for (0: off)
  // prefetch: the timed steps train on the last warm-up batch, kept on the GPU (the step's own rate, its
  // all-reduce included, with no input: issue 41's ceiling for data-parallel scaling)
  bool resident = false;
  // prefetch under a launcher: DataParallelOptions::collective_timeout, in seconds
  double collective_timeout = 60;
  std::size_t host_blocks_ahead = 0;  // FeederOptions::host_blocks_ahead
  int kernel_blocks = 0;       // FeederOptions::kernel_blocks_per_image (0: one pass's worth)
  // issue 41, each a lever measured against its baseline (see --help):
  bool memory_near_gpu = true;    // HostPlacement::memory_near_gpu
  bool start_at_once = true;      // DeviceDecode::start_at_once
  bool open_before_second = true;  // DeviceDecode::open_before_second
  int decode_threads = 1;          // DeviceDecode::decode_threads
  bool set_up_behind = true;      // FeederOptions::set_up_behind
  bool gpu_hybrid = true;         // DeviceDecode::gpu_hybrid
  bool gpu_adapt = true;          // DeviceDecode::adapt
  bool copy_whole_batch = true;   // DeviceDecode::copy_whole_batch
  std::string step_priority = "default";  // default | urgent (TrainerOptions::urgent_stream)
  // prefetch from the data service (conveyor/service/client.h) instead of a pipeline here: its dispatcher,
  // the trainer's own cores that make splits too, the job's name, token and TLS folder.
  std::string service;
  int service_local_threads = 0;
  bool service_local_gpu_first = true;
  std::size_t service_streams = 2;
  bool service_keep_memory = true;
  bool service_shared_memory = true;
  std::string service_job, service_token, service_tls;
};

// Parses argv; on --help prints the usage and exits 0, on a bad argument says why and exits 2.
Options parse_options(int argc, char** argv);

}  // namespace feed_vs_prefetch
