// list_devices: what this machine offers to conveyor and what stands in the way.
//
//   list_devices                 GPUs, CPU, library versions actually loaded, problems in plain words
//   list_devices --device gpu:1  ... and where a run asked to go there would go (or why it cannot)
//   list_devices --json          the same as one JSON object, for scripts
//
// GPU indices are those after CUDA_VISIBLE_DEVICES; the PCI bus id names the physical card.
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/error.h"
#include "conveyor/train/library_versions.h"

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

std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string json_version(const Version& v) { return v.known() ? quoted(v.to_string()) : "null"; }

void print_json(const Report& r) {
  std::string out = "{\n  \"gpus\": [";
  for (std::size_t i = 0; i < r.gpus.size(); ++i) {
    const GpuInfo& g = r.gpus[i];
    out += std::string(i ? "," : "") + "\n    {\"index\": " + std::to_string(g.index) +
           ", \"name\": " + quoted(g.name) + ", \"compute_capability\": " +
           quoted(std::to_string(g.compute_major) + "." + std::to_string(g.compute_minor)) +
           ", \"total_memory\": " + std::to_string(g.total_memory) +
           ", \"free_memory\": " + std::to_string(g.free_memory) +
           ", \"pci_bus_id\": " + quoted(g.pci_bus_id) +
           ", \"multiprocessors\": " + std::to_string(g.multiprocessors) + "}";
  }
  out += std::string(r.gpus.empty() ? "" : "\n  ") + "],\n";
  out += "  \"no_gpu_reason\": " + quoted(r.no_gpu_reason) + ",\n";
  out += "  \"cuda_visible_devices\": " +
         (r.versions.cuda_visible_devices ? quoted(*r.versions.cuda_visible_devices) : std::string("null")) +
         ",\n";
  out += "  \"cpu\": {\"model\": " + quoted(r.cpu.model) +
         ", \"logical_cores\": " + std::to_string(r.cpu.logical_cores) +
         ", \"usable_cores\": " + std::to_string(r.cpu.usable_cores) + "},\n";
  out += "  \"built_with_cuda\": " + std::string(r.versions.built_with_cuda ? "true" : "false") + ",\n";
  out += "  \"nvidia_kernel_module\": " + quoted(r.versions.nvidia_kernel_module) + ",\n";
  out += "  \"libraries\": [";
  const auto libraries = r.versions.libraries();
  for (std::size_t i = 0; i < libraries.size(); ++i) {
    const LibraryVersion& l = libraries[i];
    out += std::string(i ? "," : "") + "\n    {\"name\": " + quoted(l.name) +
           ", \"loaded\": " + json_version(l.loaded) + ", \"compiled\": " + json_version(l.compiled) +
           ", \"path\": " + quoted(l.path) + ", \"detail\": " + quoted(l.detail) + "}";
  }
  out += "\n  ],\n  \"problems\": [";
  for (std::size_t i = 0; i < r.problems.size(); ++i)
    out += std::string(i ? ", " : "") + quoted(r.problems[i]);
  out += "],\n  \"device\": " + quoted(r.device_text) + ",\n  \"placement\": ";
  if (r.placement)
    out += "{\"gpu\": " + std::string(r.placement->gpu ? "true" : "false") +
           ", \"device\": " + std::to_string(r.placement->device) +
           ", \"description\": " + quoted(r.placement->description) +
           ", \"reason\": " + quoted(r.placement->reason) + "}";
  else
    out += "null,\n  \"placement_error\": " + quoted(r.placement_error);
  out += "\n}\n";
  std::fputs(out.c_str(), stdout);
}

int usage(const char* program) {
  std::fprintf(stderr, "usage: %s [--device auto|cpu|gpu|gpu:N] [--json]\n", program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Report report;
  report.device_text = "auto";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--json") {
      json = true;
    } else if (arg == "--device" && i + 1 < argc) {
      report.device_text = argv[++i];
    } else if (arg.starts_with("--device=")) {
      report.device_text = std::string(arg.substr(9));
    } else {
      return usage(argv[0]);
    }
  }
  DeviceSpec spec;
  try {
    spec = DeviceSpec::parse(report.device_text);
  } catch (const InvalidArgument& error) {
    std::fprintf(stderr, "list_devices: %s\n", error.what());
    return 2;
  }
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
