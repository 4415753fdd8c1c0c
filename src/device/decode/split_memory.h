// The hybrid split an adapting run settled at, kept for the next run on the same machine (issue 36, "start
// at speed"): a run that starts at the remembered share and per-image costs decodes its first batches at
// the balance the last run found, instead of at DeviceDecode::share while the controller measures.
//
// One JSON file per environment (the GPU's name and SM count, the driver, nvJPEG's version) in the folder
// of the cuDNN algorithm cache (src/core/user_cache_folder.h), named after it; each entry is keyed by what
// else moves the balance: the pipeline's threads, the batch, the slot shape, the data set and the caller's
// DeviceDecode::memory_key (the work beside the decoder: a training step moves it most). The file is a
// hint: a record out of range is ignored, and the controller keeps adapting from where it starts. Writes
// merge with what other processes wrote meanwhile (two ranks of one host) and replace the file at once.
// Nothing here needs CUDA, so it is tested on the CPU.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace conveyor::detail {

struct SplitRecord {
  double share = 0.5;  // the share the split settled at (its running average over the last batches)
  // The controller's estimates, seconds per image: the CPU workers' per image they decode and per image
  // they defer, the GPU decoder's per deferred image (decode_split.h).
  double cpu_decode_s = 0, cpu_defer_s = 0, gpu_decode_s = 0;
  std::uint64_t batches = 0;  // batches measured behind it
};

class SplitMemory {
 public:
  // The file for `environment` (one line: GPU, SMs, driver, nvJPEG) in `folder`.
  SplitMemory(std::filesystem::path folder, std::string environment);

  // The record of `key`, read from the file now; nullopt when there is none (or the file is unusable).
  std::optional<SplitRecord> recall(const std::string& key) const;
  // Writes `record` under `key`, merged with the file's other entries. Returns what went wrong ("" when
  // written): a memory that cannot be written costs the next run its head start, not this run anything.
  std::string keep(const std::string& key, const SplitRecord& record) const;

  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  std::filesystem::path folder_, file_;
  std::string environment_;
};

}  // namespace conveyor::detail
