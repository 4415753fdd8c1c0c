// Convolution algorithms chosen by timing, kept on disk so that the next process on the same machine does
// not time them again (cuDNN's search is most of a cold warm-up: 2-3 s for ResNet-18).
//
// One JSON file per environment (GPU name, compute capability and SM count, driver, CUDA runtime and cuDNN
// versions), named after it, in a folder of the user's cache. Each entry is keyed by everything that
// decides the choice: the convolution's shapes, layout, types and math. The file is only a hint: the
// layer checks every entry against what cuDNN reports for the shape before using it (conv2d_cudnn.cpp),
// and a file that cannot be read, is not this format, or was written for another environment is
// ignored with a warning. Nothing here needs cuDNN, so the format is tested on the CPU.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/train/nn/shape.h"
#include "src/train/layers/tensor.h"

namespace conveyor::nn {

// What an algorithm choice is only valid for.
struct AlgorithmEnvironment {
  std::string gpu;  // cudaDeviceProp::name
  int compute_major = 0, compute_minor = 0;
  int sm_count = 0;
  int driver = 0;   // cudaDriverGetVersion
  int runtime = 0;  // cudaRuntimeGetVersion
  long long cudnn = 0;
  bool operator==(const AlgorithmEnvironment&) const = default;

  // "cudnn-algorithms-NVIDIA_H100_80GB_HBM3-sm90-132sm-driver13000-cuda13000-cudnn91900.json"
  std::string file_name() const;
  std::string describe() const;
};

// One direction's algorithm as cuDNN's enums give it, stored as integers.
struct AlgorithmChoice {
  int algorithm = 0;
  int math = 0;                     // cudnnMathType_t
  std::size_t workspace_bytes = 0;  // what the search reported (the layer asks cuDNN again before use)
  float ms = 0;                     // time measured by the search
  bool operator==(const AlgorithmChoice&) const = default;
};

struct ConvolutionChoices {
  AlgorithmChoice forward, backward_filter;
  std::optional<AlgorithmChoice> backward_data;  // absent for a first layer (no input gradient)
  // The workspace limit the search ran under: a later process with more room searches again, since a
  // faster algorithm may have been left out for lack of room.
  std::size_t search_budget = 0;
  bool operator==(const ConvolutionChoices&) const = default;
};

// The key of a convolution: every property that changes cuDNN's choice (NHWC activations, KRSC filters,
// cross-correlation in float accumulation, no dilation; tensor-op math for 16-bit types, FMA for fp32).
std::string convolution_key(const ConvGeometry& geometry, DType type, bool needs_input_grad);

// Where the cache lives: `option` when given; else $CONVEYOR_ALGORITHM_CACHE; else
// $XDG_CACHE_HOME/conveyor (an absolute XDG_CACHE_HOME only, as the XDG specification asks); else
// $HOME/.cache/conveyor. The environment's values are passed in (null when unset). nullopt: the cache is
// off ($CONVEYOR_ALGORITHM_CACHE=off), or there is no home to put it in.
std::optional<std::filesystem::path> algorithm_cache_folder(const std::filesystem::path& option,
                                                            const char* conveyor_env, const char* xdg_env,
                                                            const char* home_env);

struct AlgorithmCacheCounts {
  std::size_t loaded = 0;    // entries read from the file
  std::size_t reused = 0;    // convolutions whose algorithms came from the file
  std::size_t searched = 0;  // convolutions timed by cuDNN
  std::size_t rejected = 0;  // entries cuDNN no longer accepts for their shape
  std::size_t warnings = 0;  // the file was unreadable, corrupt, foreign, or could not be written
};

class AlgorithmCache {
 public:
  // The cache of `environment` in `folder`: reads its file when there is one. Never throws for the file's
  // sake: a problem is counted in counts().warnings and described in messages().
  AlgorithmCache(std::filesystem::path folder, AlgorithmEnvironment environment);

  const std::filesystem::path& file() const noexcept { return file_; }
  const AlgorithmEnvironment& environment() const noexcept { return environment_; }
  const ConvolutionChoices* find(const std::string& key) const;
  // A new or better choice; written by save().
  void store(const std::string& key, const ConvolutionChoices& choices);
  // Drops an entry that cuDNN does not accept any more (counted, with the reason); written by save().
  void reject(const std::string& key, const std::string& why);
  // Writes the entries if anything changed since the file was read: merged with what the file holds now
  // (another process may have added shapes meanwhile; this one's entries win), into a temporary file in
  // the same folder that is then renamed over the cache, so that a reader sees the old or the new file,
  // never part of one. A failure is a warning, not an exception.
  void save();

  AlgorithmCacheCounts& counts() noexcept { return counts_; }
  const AlgorithmCacheCounts& counts() const noexcept { return counts_; }
  // Why each warning and rejection happened (the first few).
  const std::vector<std::string>& messages() const noexcept { return messages_; }

 private:
  void warn(std::string message);
  // The entries of the file as it is now; problems are warnings when `counting`.
  std::map<std::string, ConvolutionChoices> read(bool counting);

  std::filesystem::path folder_, file_;
  AlgorithmEnvironment environment_;
  std::map<std::string, ConvolutionChoices> entries_;
  std::vector<std::string> rejected_keys_;
  bool dirty_ = false;
  AlgorithmCacheCounts counts_;
  std::vector<std::string> messages_;
};

}  // namespace conveyor::nn
