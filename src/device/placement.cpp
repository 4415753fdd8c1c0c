#include "src/device/placement.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>

#include "conveyor/error.h"
#include "src/device/gpu_query.h"

namespace conveyor {
namespace {

constexpr const char* kSpellings = "expected 'auto', 'cpu', 'gpu' or 'gpu:N' (N = 0, 1, ...)";

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

std::string describe_gpu(const GpuInfo& gpu) {
  return "gpu:" + std::to_string(gpu.index) + " (" + gpu.name + ", compute " +
         std::to_string(gpu.compute_major) + "." + std::to_string(gpu.compute_minor) + ", " +
         gib(gpu.total_memory) + (gpu.pci_bus_id.empty() ? "" : ", PCI " + gpu.pci_bus_id) + ")";
}

std::string describe_gpus(std::span<const GpuInfo> gpus) {
  std::string list;
  for (const GpuInfo& gpu : gpus) list += (list.empty() ? "" : ", ") + describe_gpu(gpu);
  return list;
}

std::string describe_cpu() {
  const CpuInfo cpu = cpu_info();
  return "cpu (" + cpu.model + ", " + std::to_string(cpu.usable_cores) + " usable cores)";
}

Placement on_cpu(std::string reason) { return {false, -1, describe_cpu(), std::move(reason)}; }

}  // namespace

DeviceSpec DeviceSpec::parse(std::string_view text) {
  if (text == "auto") return {Kind::automatic, 0};
  if (text == "cpu") return {Kind::cpu, 0};
  if (text == "gpu") return {Kind::gpu, 0};
  if (text.starts_with("gpu:")) {
    const std::string_view digits = text.substr(4);
    int index = -1;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    // from_chars accepts a leading '-': refuse it along with empty or trailing text.
    if (!digits.empty() && digits.front() != '-' && error == std::errc() &&
        end == digits.data() + digits.size())
      return {Kind::gpu, index};
  }
  throw InvalidArgument("device '" + std::string(text) + "': " + kSpellings);
}

std::string DeviceSpec::to_string() const {
  switch (kind) {
    case Kind::automatic:
      return "auto";
    case Kind::cpu:
      return "cpu";
    case Kind::gpu:
      return "gpu:" + std::to_string(index);
  }
  return "auto";
}

namespace detail {

Placement resolve_among(const DeviceSpec& spec, std::span<const GpuInfo> visible,
                        const std::string& unavailable_reason) {
  switch (spec.kind) {
    case DeviceSpec::Kind::cpu:
      return on_cpu("requested cpu");
    case DeviceSpec::Kind::automatic:
      if (visible.empty()) return on_cpu("auto: no CUDA device visible: " + unavailable_reason);
      return {true, visible.front().index, describe_gpu(visible.front()),
              "auto: the first visible CUDA device"};
    case DeviceSpec::Kind::gpu:
      break;
  }
  if (visible.empty())
    throw DeviceError("device '" + spec.to_string() + "' requested but no CUDA device is visible: " +
                      unavailable_reason + " (use --device cpu or auto)");
  const auto found =
      std::find_if(visible.begin(), visible.end(), [&](const GpuInfo& g) { return g.index == spec.index; });
  if (found == visible.end())
    throw InvalidArgument("device '" + spec.to_string() +
                          "' does not exist; visible devices (indices after "
                          "CUDA_VISIBLE_DEVICES): " +
                          describe_gpus(visible));
  return {true, found->index, describe_gpu(*found), "requested " + spec.to_string()};
}

Placement rank_gpu_among(const Ranks& ranks, std::span<const GpuInfo> visible,
                         const std::string& unavailable_reason) {
  const std::string rank =
      "local rank " + std::to_string(ranks.local_rank) + " of " + std::to_string(ranks.local_world_size);
  if (visible.empty())
    throw DeviceError(rank + " needs a GPU, but no CUDA device is visible: " + unavailable_reason);
  if (visible.size() == 1 && ranks.local_world_size > 1)
    return {true, visible.front().index, describe_gpu(visible.front()),
            rank + ": the only GPU this process sees (the launcher gave each process its own)"};
  if (static_cast<std::size_t>(ranks.local_rank) < visible.size()) {
    const GpuInfo& gpu = visible[static_cast<std::size_t>(ranks.local_rank)];
    return {true, gpu.index, describe_gpu(gpu), rank + ": the GPU of its local rank"};
  }
  throw InvalidArgument(
      rank + " drives GPU " + std::to_string(ranks.local_rank) + ", but this process sees " +
      std::to_string(visible.size()) + " (" + describe_gpus(visible) +
      "; indices after CUDA_VISIBLE_DEVICES): let every process see all of the host's GPUs, "
      "or each exactly one");
}

}  // namespace detail

Placement resolve(const DeviceSpec& spec) {
  if (spec.kind == DeviceSpec::Kind::cpu) return on_cpu("requested cpu");
  const detail::GpuCensus census = detail::take_gpu_census(false);
  return detail::resolve_among(spec, census.gpus, census.unavailable_reason);
}

Placement resolve_rank_gpu(const Ranks& ranks) {
  const detail::GpuCensus census = detail::take_gpu_census(false);
  return detail::rank_gpu_among(ranks, census.gpus, census.unavailable_reason);
}

std::string describe_placement(const Placement& placement, std::span<const StagePlacement> stages) {
  std::string report = "placement: " + placement.description + "\n  why: " + placement.reason + "\n";
  std::size_t width = 0;
  for (const StagePlacement& stage : stages) width = std::max(width, stage.stage.size());
  for (const StagePlacement& stage : stages)
    report +=
        "  " + stage.stage + std::string(width - stage.stage.size(), ' ') + "  -> " + stage.where + "\n";
  return report;
}

}  // namespace conveyor
