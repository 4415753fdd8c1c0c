#include "src/train/layers/algorithm_cache.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "conveyor/atomic_file.h"
#include "src/core/user_cache_folder.h"

namespace conveyor::nn {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "conveyor cuDNN convolution algorithms";
constexpr int kVersion = 1;
constexpr std::size_t kMaxMessages = 16;

json environment_json(const AlgorithmEnvironment& e) {
  return {{"gpu", e.gpu},
          {"compute_capability", {e.compute_major, e.compute_minor}},
          {"sm_count", e.sm_count},
          {"driver", e.driver},
          {"cuda_runtime", e.runtime},
          {"cudnn", e.cudnn}};
}

AlgorithmEnvironment environment_from(const json& j) {
  AlgorithmEnvironment e;
  e.gpu = j.at("gpu").get<std::string>();
  const json& cc = j.at("compute_capability");
  e.compute_major = cc.at(0).get<int>();
  e.compute_minor = cc.at(1).get<int>();
  e.sm_count = j.at("sm_count").get<int>();
  e.driver = j.at("driver").get<int>();
  e.runtime = j.at("cuda_runtime").get<int>();
  e.cudnn = j.at("cudnn").get<long long>();
  return e;
}

json choice_json(const AlgorithmChoice& c) {
  return {{"algorithm", c.algorithm}, {"math", c.math}, {"workspace_bytes", c.workspace_bytes}, {"ms", c.ms}};
}

// Throws json::exception (or std::out_of_range-like json errors) on a missing field or wrong type.
AlgorithmChoice choice_from(const json& j) {
  AlgorithmChoice c;
  c.algorithm = j.at("algorithm").get<int>();
  c.math = j.at("math").get<int>();
  c.workspace_bytes = j.at("workspace_bytes").get<std::size_t>();
  c.ms = j.at("ms").get<float>();
  if (c.algorithm < 0 || c.math < 0) throw std::invalid_argument("negative algorithm or math type");
  return c;
}

json entry_json(const ConvolutionChoices& c) {
  json j = {{"search_budget", c.search_budget},
            {"forward", choice_json(c.forward)},
            {"backward_filter", choice_json(c.backward_filter)}};
  if (c.backward_data) j["backward_data"] = choice_json(*c.backward_data);
  return j;
}

ConvolutionChoices entry_from(const json& j) {
  ConvolutionChoices c;
  c.search_budget = j.at("search_budget").get<std::size_t>();
  c.forward = choice_from(j.at("forward"));
  c.backward_filter = choice_from(j.at("backward_filter"));
  if (j.contains("backward_data")) c.backward_data = choice_from(j.at("backward_data"));
  return c;
}

}  // namespace

std::string AlgorithmEnvironment::file_name() const {
  return "cudnn-algorithms-" + detail::cache_file_safe(gpu) + "-sm" + std::to_string(compute_major) +
         std::to_string(compute_minor) + "-" + std::to_string(sm_count) + "sm-driver" +
         std::to_string(driver) + "-cuda" + std::to_string(runtime) + "-cudnn" + std::to_string(cudnn) +
         ".json";
}

std::string AlgorithmEnvironment::describe() const {
  return gpu + " (compute " + std::to_string(compute_major) + "." + std::to_string(compute_minor) + ", " +
         std::to_string(sm_count) + " SMs), driver " + std::to_string(driver) + ", CUDA runtime " +
         std::to_string(runtime) + ", cuDNN " + std::to_string(cudnn);
}

std::string convolution_key(const ConvGeometry& g, DType type, bool needs_input_grad) {
  const Shape4& s = g.input;
  std::ostringstream key;
  key << "n" << s.n << " h" << s.h << " w" << s.w << " c" << s.c << " k" << g.out_channels << " r" << g.kernel
      << " s" << g.kernel << " stride" << g.stride << " pad" << g.pad << " dilation1 " << to_string(type)
      << " nhwc krsc xcorr accumulate-fp32 " << (type == DType::f32 ? "fma-math" : "tensor-op-math")
      << (needs_input_grad ? " +dgrad" : "");
  return key.str();
}

std::optional<std::filesystem::path> algorithm_cache_folder(const std::filesystem::path& option,
                                                            const char* conveyor_env, const char* xdg_env,
                                                            const char* home_env) {
  // The one folder every wing keeps what it learns in (the decode split's memory lives there too).
  return detail::user_cache_folder(option, conveyor_env, xdg_env, home_env);
}

AlgorithmCache::AlgorithmCache(std::filesystem::path folder, AlgorithmEnvironment environment)
    : folder_(std::move(folder)), environment_(std::move(environment)) {
  file_ = folder_ / environment_.file_name();
  entries_ = read(true);
  counts_.loaded = entries_.size();
}

void AlgorithmCache::warn(std::string message) {
  ++counts_.warnings;
  if (messages_.size() < kMaxMessages) messages_.push_back(std::move(message));
}

std::map<std::string, ConvolutionChoices> AlgorithmCache::read(bool counting) {
  std::map<std::string, ConvolutionChoices> out;
  auto problem = [&](const std::string& why) {
    if (counting) warn("algorithm cache " + file_.string() + " ignored: " + why);
    return std::map<std::string, ConvolutionChoices>{};
  };
  std::error_code ec;
  if (!std::filesystem::exists(file_, ec)) return out;  // a first run: nothing to read, nothing wrong
  std::ifstream in(file_, std::ios::binary);
  if (!in) return problem("cannot be opened");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::exception& e) {
    return problem(std::string("not valid JSON (") + e.what() + ")");
  }
  try {
    if (!j.is_object() || j.value("format", std::string()) != kFormat)
      return problem("not a conveyor algorithm cache");
    if (j.at("version").get<int>() != kVersion)
      return problem("format version " + j.at("version").dump() + ", this build reads " +
                     std::to_string(kVersion));
    const AlgorithmEnvironment theirs = environment_from(j.at("environment"));
    if (!(theirs == environment_))
      return problem("written for " + theirs.describe() + ", this is " + environment_.describe());
    for (const auto& [key, value] : j.at("convolutions").items()) {
      try {
        out.emplace(key, entry_from(value));
      } catch (const std::exception& e) {
        if (counting)
          warn("algorithm cache " + file_.string() + ": entry '" + key + "' skipped (" + e.what() + ")");
      }
    }
  } catch (const json::exception& e) {
    return problem(std::string("malformed (") + e.what() + ")");
  }
  return out;
}

const ConvolutionChoices* AlgorithmCache::find(const std::string& key) const {
  const auto found = entries_.find(key);
  return found == entries_.end() ? nullptr : &found->second;
}

void AlgorithmCache::store(const std::string& key, const ConvolutionChoices& choices) {
  entries_[key] = choices;
  dirty_ = true;
}

void AlgorithmCache::reject(const std::string& key, const std::string& why) {
  ++counts_.rejected;
  if (messages_.size() < kMaxMessages) messages_.push_back("cached algorithms rejected: " + why);
  entries_.erase(key);
  rejected_keys_.push_back(key);
  dirty_ = true;
}

void AlgorithmCache::save() {
  if (!dirty_) return;
  // Entries another process wrote since this one read the file are kept, unless this one replaced them
  // or found them wrong.
  std::map<std::string, ConvolutionChoices> merged = read(false);
  for (const std::string& key : rejected_keys_) merged.erase(key);
  for (const auto& [key, value] : entries_) merged[key] = value;
  json j = {{"format", kFormat}, {"version", kVersion}, {"environment", environment_json(environment_)}};
  json& convolutions = j["convolutions"] = json::object();
  for (const auto& [key, value] : merged) convolutions[key] = entry_json(value);

  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  if (ec)
    return warn("algorithm cache not written: cannot create " + folder_.string() + " (" + ec.message() + ")");
  try {
    write_file_atomically(file_, j.dump(1) + "\n");
  } catch (const std::exception& error) {
    return warn(std::string("algorithm cache not written: ") + error.what());
  }
  dirty_ = false;
  rejected_keys_.clear();
}

}  // namespace conveyor::nn
