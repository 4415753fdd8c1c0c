#include "report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "conveyor/error.h"

namespace feed_vs_prefetch {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + '"';
}

// [1.5, 2.25] with full precision (losses are compared across runs).
std::string numbers(const std::vector<double>& values) {
  std::ostringstream out;
  out.precision(17);
  out << '[';
  for (std::size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  return out.str() + ']';
}

double speedup(const std::vector<ModeResult>& results, const ModeResult& r) {
  for (const auto& other : results)
    if (other.mode == "feed" && other.images_per_s > 0) return r.images_per_s / other.images_per_s;
  return 0;
}

}  // namespace

std::string format_table(const RunInfo& info, const std::vector<ModeResult>& results) {
  std::ostringstream out;
  char line[256];
  out << "feed_vs_prefetch: " << info.model << ", batch " << info.batch << ", " << info.size << "x"
      << info.size
      << (info.world_size > 1 || info.gpus > 1
              ? " per replica (rank " + std::to_string(info.rank) + " of " + std::to_string(info.world_size) +
                    ", " + std::to_string(info.gpus) + " GPU(s) here)"
              : std::string())
      << ", " << info.threads << " threads, " << info.steps << " timed steps per mode\n"
      << "device: " << info.device << "\n\n";
  std::snprintf(line, sizeof line, "%-9s %10s %9s %9s %9s %9s %9s %7s %7s %8s\n", "mode", "images/s", "step p50",
                "step p95", "data", "copy", "compute", "wait", "idle", "speed-up");
  out << line;
  std::snprintf(line, sizeof line, "%-9s %10s %9s %9s %9s %9s %9s %7s %7s %8s\n", "", "", "ms", "ms", "ms", "ms",
                "ms", "%", "%", "x feed");
  out << line;
  for (const auto& r : results) {
    const double x = speedup(results, r);
    std::snprintf(line, sizeof line, "%-9s %10.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.1f %7.1f %8s\n", r.mode.c_str(),
                  r.images_per_s, r.step_ms_median, r.step_ms_p95, r.data_wait_ms, r.copy_ms, r.compute_ms,
                  100 * r.data_wait_fraction, 100 * r.idle_fraction,
                  x > 0 ? (std::to_string(x).substr(0, std::to_string(x).find('.') + 2)).c_str() : "-");
    out << line;
  }
  for (const auto& r : results) {
    if (r.idle_per_gpu.size() < 2) continue;
    out << "  " << r.mode << ": idle per GPU of this process:";
    for (const double idle : r.idle_per_gpu) {
      std::snprintf(line, sizeof line, " %.1f %%", 100 * idle);
      out << line;
    }
    out << "\n";
  }
  out << "\nwarm-up, not in the figures above:\n";
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "  %-9s trainer warm-up %.2f s, first batch %.3f s, first step %.3f s\n",
                  r.mode.c_str(), r.warmup_s, r.first_batch_s, r.first_step_s);
    out << line;
  }
  out << "(data: waiting for or making the batch; copy: host to device; compute: the step on the device;\n"
         " wait: share of wall time spent on data; idle: share of wall time the "
      << (info.device.rfind("gpu", 0) == 0 ? "GPU" : "training thread") << " did not compute)\n";
  return out.str();
}

void write_json(const std::string& path, const RunInfo& info, const std::vector<ModeResult>& results) {
  std::ofstream out(path);
  if (!out) throw conveyor::IoError("cannot write " + path);
  out << "{\n  \"device\": " << quoted(info.device) << ",\n  \"model\": " << quoted(info.model)
      << ",\n  \"precision\": " << quoted(info.precision) << ",\n  \"data\": " << quoted(info.data)
      << ",\n  \"images_in_data\": " << info.images << ",\n  \"date\": " << quoted(info.date)
      << ",\n  \"host\": " << quoted(info.host) << ",\n  \"threads\": " << info.threads
      << ",\n  \"batch\": " << info.batch << ",\n  \"size\": " << info.size
      << ",\n  \"steps\": " << info.steps << ",\n  \"world_size\": " << info.world_size
      << ",\n  \"rank\": " << info.rank << ",\n  \"gpus_in_process\": " << info.gpus
      << ",\n  \"deterministic\": " << (info.deterministic ? "true" : "false") << ",\n  \"results\": [\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    out << "    {\"mode\": " << quoted(r.mode) << ", \"images_per_s\": " << r.images_per_s
        << ", \"step_ms_median\": " << r.step_ms_median << ", \"step_ms_p95\": " << r.step_ms_p95
        << ", \"data_wait_ms\": " << r.data_wait_ms << ", \"copy_ms\": " << r.copy_ms
        << ", \"compute_ms\": " << r.compute_ms << ", \"data_wait_fraction\": " << r.data_wait_fraction
        << ", \"idle_fraction\": " << r.idle_fraction << ", \"speedup_over_feed\": " << speedup(results, r)
        << ", \"warmup_s\": " << r.warmup_s << ", \"first_batch_s\": " << r.first_batch_s
        << ", \"first_step_s\": " << r.first_step_s << ", \"loss_last\": " << r.loss_last
        << ", \"idle_per_gpu\": " << numbers(r.idle_per_gpu) << ", \"losses\": " << numbers(r.losses) << "}"
        << (i + 1 < results.size() ? "," : "") << "\n";
  }
  out << "  ]\n}\n";
  if (!out) throw conveyor::IoError("cannot write " + path);
}

}  // namespace feed_vs_prefetch
