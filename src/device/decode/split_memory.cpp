#include "src/device/decode/split_memory.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <system_error>

#include "conveyor/atomic_file.h"
#include "conveyor/error.h"
#include "src/core/user_cache_folder.h"

namespace conveyor::detail {

// A record's JSON object: its fields under their own names, each required when read. Declared here, not in
// the anonymous namespace: nlohmann finds to_json / from_json by argument-dependent lookup, in SplitRecord's
// own namespace.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SplitRecord, share, cpu_decode_s, cpu_defer_s, gpu_decode_s, batches)

namespace {

using nlohmann::json;

constexpr const char* kFormat = "conveyor decode split";
constexpr int kVersion = 1;

bool usable(const SplitRecord& r) {
  const auto cost = [](double s) { return std::isfinite(s) && s >= 0 && s < 1; };
  return std::isfinite(r.share) && r.share >= 0 && r.share <= 1 && cost(r.cpu_decode_s) &&
         cost(r.cpu_defer_s) && cost(r.gpu_decode_s);
}

// The file's entries when it is this format and environment; empty otherwise (a first run, or a file
// written elsewhere: both start from nothing).
json read_entries(const std::filesystem::path& file, const std::string& environment) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return json::object();
  std::ifstream in(file, std::ios::binary);
  if (!in) return json::object();
  try {
    const json j = json::parse(in);
    if (!j.is_object() || j.value("format", std::string()) != kFormat || j.value("version", 0) != kVersion ||
        j.value("environment", std::string()) != environment || !j.contains("splits") ||
        !j.at("splits").is_object())
      return json::object();
    return j.at("splits");
  } catch (const json::exception&) {
    return json::object();
  }
}

}  // namespace

SplitMemory::SplitMemory(std::filesystem::path folder, std::string environment)
    : folder_(std::move(folder)), environment_(std::move(environment)) {
  file_ = folder_ / ("decode-split-" + cache_file_safe(environment_) + ".json");
}

std::optional<SplitRecord> SplitMemory::recall(const std::string& key) const {
  const json entries = read_entries(file_, environment_);
  if (!entries.contains(key)) return std::nullopt;
  try {
    const auto record = entries.at(key).get<SplitRecord>();
    if (usable(record)) return record;
  } catch (const json::exception&) {
  }
  return std::nullopt;
}

std::string SplitMemory::keep(const std::string& key, const SplitRecord& record) const {
  if (!usable(record)) return "the split to remember is out of range";
  json entries = read_entries(file_, environment_);
  entries[key] = record;
  const json j = {
      {"format", kFormat}, {"version", kVersion}, {"environment", environment_}, {"splits", entries}};
  try {
    std::filesystem::create_directories(folder_);
    write_file_atomically(file_, j.dump(1) + "\n");
  } catch (const std::exception& error) {
    return std::string("decode split not remembered: ") + error.what();
  }
  return "";
}

}  // namespace conveyor::detail
