// list_devices: what this machine offers to conveyor and what stands in the way.
//
//   list_devices                 GPUs, CPU, library versions actually loaded, problems in plain words
//   list_devices --device gpu:1  ... and where a run asked to go there would go (or why it cannot)
//   list_devices --json          the same as one JSON object, for scripts
//
// GPU indices are those after CUDA_VISIBLE_DEVICES; the PCI bus id names the physical card.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"
#include "conveyor/train/library_versions.h"
#include "device_option.h"

namespace {

using namespace conveyor;

std::string gib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return text;
}

// Loaded version, and the compiled-against one only where it differs (the interesting case).
std::string version_text(const LibraryVersion& library) {
  std::string text = library.loaded.known() ? library.loaded.to_string() : "not found";
  if (library.compiled.known() && library.compiled != library.loaded)
    text += " (built against " + library.compiled.to_string() + ")";
  return text;
}

struct Report {
  std::vector<GpuInfo> gpus;
  std::string no_gpu_reason;
  CpuInfo cpu;
  LibraryVersions versions;
  std::vector<std::string> problems;
  std::string device_text;
  std::optional<Placement> placement;
  std::string placement_error;
};

void print_text(const Report& r) {
  std::printf("GPUs (indices after CUDA_VISIBLE_DEVICES%s)\n",
              r.versions.cuda_visible_devices ? ("='" + *r.versions.cuda_visible_devices + "'").c_str()
                                              : ", not set");
  if (r.gpus.empty()) std::printf("  none visible: %s\n", r.no_gpu_reason.c_str());
  for (const GpuInfo& g : r.gpus)
    std::printf("  gpu:%d  %s  compute %d.%d  %s total, %s free  PCI %s  %d SMs\n", g.index, g.name.c_str(),
                g.compute_major, g.compute_minor, gib(g.total_memory).c_str(), gib(g.free_memory).c_str(),
                g.pci_bus_id.c_str(), g.multiprocessors);
  std::printf("CPU\n  %s: %u logical cores, %u usable by this process\n", r.cpu.model.c_str(),
              r.cpu.logical_cores, r.cpu.usable_cores);
  if (!r.versions.nvidia_kernel_module.empty())
    std::printf("NVIDIA kernel module\n  %s\n", r.versions.nvidia_kernel_module.c_str());
  std::printf("Libraries (versions loaded at run time)\n");
  for (const LibraryVersion& library : r.versions.libraries()) {
    std::printf("  %-14s %s", library.name.c_str(), version_text(library).c_str());
    if (!library.detail.empty()) std::printf("  [%s]", library.detail.c_str());
    if (!library.path.empty()) std::printf("\n  %-14s %s", "", library.path.c_str());
    std::printf("\n");
  }
  if (!r.versions.built_with_cuda) std::printf("  (CUDA, cuDNN, cuBLAS: not part of this build)\n");
  std::printf("Problems\n");
  if (r.problems.empty()) std::printf("  none\n");
  for (const std::string& problem : r.problems) std::printf("  - %s\n", problem.c_str());
  std::printf("Placement for --device %s\n", r.device_text.c_str());
  if (r.placement)
    std::printf("  %s\n  why: %s\n", r.placement->description.c_str(), r.placement->reason.c_str());
  else
    std::printf("  cannot place: %s\n", r.placement_error.c_str());
}

nlohmann::ordered_json json_version(const Version& v) {
  return v.known() ? nlohmann::ordered_json(v.to_string()) : nlohmann::ordered_json(nullptr);
}

void print_json(const Report& r) {
  using Json = nlohmann::ordered_json;  // ordered: the fields stay in the order written here
  Json out;
  out["gpus"] = Json::array();
  for (const GpuInfo& g : r.gpus)
    out["gpus"].push_back(
        {{"index", g.index},
         {"name", g.name},
         {"compute_capability", std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)},
         {"total_memory", g.total_memory},
         {"free_memory", g.free_memory},
         {"pci_bus_id", g.pci_bus_id},
         {"multiprocessors", g.multiprocessors}});
  out["no_gpu_reason"] = r.no_gpu_reason;
  out["cuda_visible_devices"] =
      r.versions.cuda_visible_devices ? Json(*r.versions.cuda_visible_devices) : Json(nullptr);
  out["cpu"] = {
      {"model", r.cpu.model}, {"logical_cores", r.cpu.logical_cores}, {"usable_cores", r.cpu.usable_cores}};
  out["built_with_cuda"] = r.versions.built_with_cuda;
  out["nvidia_kernel_module"] = r.versions.nvidia_kernel_module;
  out["libraries"] = Json::array();
  for (const LibraryVersion& l : r.versions.libraries())
    out["libraries"].push_back({{"name", l.name},
                                {"loaded", json_version(l.loaded)},
                                {"compiled", json_version(l.compiled)},
                                {"path", l.path},
                                {"detail", l.detail}});
  out["problems"] = r.problems;
  out["device"] = r.device_text;
  if (r.placement) {
    out["placement"] = {{"gpu", r.placement->gpu},
                        {"device", r.placement->device},
                        {"description", r.placement->description},
                        {"reason", r.placement->reason}};
  } else {
    out["placement"] = nullptr;
    out["placement_error"] = r.placement_error;
  }
  // Library paths and driver strings need not be UTF-8: such bytes become U+FFFD, not an exception.
  std::printf("%s\n", out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Report report;
  report.device_text = "auto";
  bool json = false;
  CLI::App app(
      "list_devices: what this machine offers to conveyor (GPUs, CPU, the library versions loaded) and "
      "what stands in the way.\nGPU indices are those after CUDA_VISIBLE_DEVICES; the PCI bus id names the "
      "physical card.\nExit status: 0, or 1 when the --device asked for cannot be placed.");
  app.add_option("--device", report.device_text,
                 "also say where a run asked to go there would go, or why it cannot")
      ->capture_default_str()
      ->check(example_support::device_spec());
  app.add_flag("--json", json, "print the same as one JSON object, for scripts");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0; a usage error: its message and 2
  }
  const DeviceSpec spec = DeviceSpec::parse(report.device_text);  // checked by the command line
  report.gpus = list_gpus();
  if (report.gpus.empty()) report.no_gpu_reason = gpu_unavailable_reason();
  report.cpu = cpu_info();
  report.versions = train::library_versions();
  report.problems = version_problems(report.versions);
  try {
    report.placement = resolve(spec);
  } catch (const Error& error) {
    report.placement_error = error.what();
  }
  if (json)
    print_json(report);
  else
    print_text(report);
  return report.placement ? 0 : 1;
}
