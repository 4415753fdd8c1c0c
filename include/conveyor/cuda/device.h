// What this machine offers (GPUs, CPU cores, the versions of the libraries actually loaded), what is
// wrong with it in plain words, and where a run goes: `--device auto|cpu|gpu|gpu:N`.
//
// GPU indices are always those the CUDA runtime shows after CUDA_VISIBLE_DEVICES: with
// CUDA_VISIBLE_DEVICES=2,3, "gpu:0" is physical GPU 2. The PCI bus id tells the physical card.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/library_version.h"
#include "conveyor/ranks.h"

namespace conveyor {

// One visible CUDA device.
struct GpuInfo {
  int index = 0;  // runtime index (after CUDA_VISIBLE_DEVICES)
  std::string name;
  int compute_major = 0, compute_minor = 0;
  std::size_t total_memory = 0;  // bytes
  std::size_t free_memory = 0;   // bytes, at the time of the call
  std::string pci_bus_id;        // "0000:3b:00.0"
  int multiprocessors = 0;
};

// Every GPU the CUDA runtime can see. Empty in a build without CUDA, without a driver or without a
// device; never throws for any of those. Creates a CUDA context on each device (to read free memory).
std::vector<GpuInfo> list_gpus();

// The GPUs this process holds a CUDA context on (their runtime indices): what nvidia-smi lists it under.
// Asks the driver without making a context; empty in a build without CUDA or without a driver. A rank that
// trains on GPU 1 should hold GPU 1 alone (conveyor's device guards never make a context on the GPU a thread
// had before, where the process has none).
std::vector<int> gpus_in_use();

// Why no GPU is visible ("built without CUDA", "cudaErrorNoDevice: no CUDA-capable device is detected",
// ...); empty when at least one is.
std::string gpu_unavailable_reason();

struct CpuInfo {
  unsigned logical_cores = 0;  // std::thread::hardware_concurrency
  unsigned usable_cores = 0;   // sched_getaffinity: the cores this process may run on
  std::string model;           // "model name" of /proc/cpuinfo, "unknown" when absent
};
CpuInfo cpu_info();

struct LibraryVersions {
  bool built_with_cuda = false;
  LibraryVersion cuda_driver;  // loaded = the newest CUDA version the driver supports; 0 = no driver
  LibraryVersion cuda_runtime;
  // cuDNN and cuBLAS: filled by conveyor::train::library_versions() (the training wing uses them);
  // empty names here otherwise.
  LibraryVersion cudnn;
  Version cudnn_cuda;  // the CUDA runtime version cuDNN itself was built for
  LibraryVersion cublas;
  LibraryVersion libjpeg_turbo;
  LibraryVersion tbb;
  LibraryVersion opencv;
  std::string nvidia_kernel_module;  // first line of /proc/driver/nvidia/version, empty without it
  int visible_gpus = 0;
  std::string gpu_error;                            // cudaGetDeviceCount's error when it failed
  std::optional<std::string> cuda_visible_devices;  // the variable, when set

  // The libraries above in print order (CUDA ones only when built with CUDA).
  std::vector<LibraryVersion> libraries() const;
};

// Reads the versions of the libraries this process has actually loaded: the CUDA driver and runtime
// and the data wing's libraries (conveyor::train::library_versions() adds cuDNN and cuBLAS).
LibraryVersions library_versions();

// What is missing or mismatched, one plain sentence each; empty when everything fits.
std::vector<std::string> version_problems(const LibraryVersions& versions);

// Where the user asked a run to go: "auto" | "cpu" | "gpu" | "gpu:N".
struct DeviceSpec {
  enum class Kind { automatic, cpu, gpu };
  Kind kind = Kind::automatic;
  int index = 0;

  // Throws InvalidArgument for anything else, naming the accepted spellings.
  static DeviceSpec parse(std::string_view text);
  std::string to_string() const;  // parse(to_string()) gives the same spec back
  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// Where a run actually goes, and why.
struct Placement {
  bool gpu = false;
  int device = -1;          // CUDA runtime index when gpu
  std::string description;  // "gpu:0 (NVIDIA H100 80GB HBM3, compute 9.0, 79.1 GiB)" or "cpu (...)"
  std::string reason;       // "requested gpu:1", "auto: no CUDA device visible: ...", ...
};

// auto: GPU 0 when one is visible, else the CPU (the reason says why). gpu / gpu:N: that device, or
// DeviceError when none is visible, InvalidArgument (listing the visible ones) when N is out of range.
Placement resolve(const DeviceSpec& spec);

// The GPU of this process as one of a job's ranks (one process per GPU): GPU `local_rank` where the process
// sees all of the host's GPUs (torchrun, mpirun), or the only GPU it sees where the launcher gave each
// process its own (Slurm's --gpus-per-task=1, a CUDA_VISIBLE_DEVICES per rank). DeviceError when no GPU is
// visible; InvalidArgument when the process sees several GPUs but fewer than its local rank needs. Makes no
// context.
Placement resolve_rank_gpu(const Ranks& ranks);

// One line of a placement report: a stage of the run and where it executes.
struct StagePlacement {
  std::string stage;  // "decode + augment"
  std::string where;  // "cpu, 16 threads", "gpu:0 copy stream"
};

// A printable report in the spirit of TensorFlow's log_device_placement: the placement, its reason,
// then one aligned line per stage.
std::string describe_placement(const Placement& placement, std::span<const StagePlacement> stages);

}  // namespace conveyor
