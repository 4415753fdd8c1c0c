#include "report.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "conveyor/error.h"

namespace feed_vs_prefetch {
namespace {

double speedup(const std::vector<ModeResult>& results, const ModeResult& r) {
  for (const auto& other : results)
    if (other.mode == "feed" && other.images_per_s > 0) return r.images_per_s / other.images_per_s;
  return 0;
}

}  // namespace

std::string format_table(const RunInfo& info, const std::vector<ModeResult>& results) {
  const Options& o = info.setup.options;
  const conveyor::Ranks& ranks = info.setup.ranks;
  std::ostringstream out;
  char line[256];
  out << "feed_vs_prefetch: " << o.model << ", batch " << o.batch << ", " << o.size << "x" << o.size
      << (ranks.world_size > 1 ? " per rank (rank " + std::to_string(ranks.rank) + " of " +
                                     std::to_string(ranks.world_size) + ")"
                               : std::string())
      << ", " << o.threads << " threads, " << o.steps << " timed steps per mode\n"
      << "device: " << info.setup.placement.description << "\n\n";
  std::snprintf(line, sizeof line, "%-9s %10s %9s %9s %9s %9s %9s %7s %7s %8s\n", "mode", "images/s",
                "step p50", "step p95", "data", "copy", "compute", "wait", "idle", "speed-up");
  out << line;
  std::snprintf(line, sizeof line, "%-9s %10s %9s %9s %9s %9s %9s %7s %7s %8s\n", "", "", "ms", "ms", "ms",
                "ms", "ms", "%", "%", "x feed");
  out << line;
  for (const auto& r : results) {
    const double x = speedup(results, r);
    std::snprintf(line, sizeof line, "%-9s %10.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7.1f %7.1f %8s\n",
                  r.mode.c_str(), r.images_per_s, r.step_ms_median, r.step_ms_p95, r.data_wait_ms, r.copy_ms,
                  r.compute_ms, 100 * r.data_wait_fraction, 100 * r.idle_fraction,
                  x > 0 ? (std::to_string(x).substr(0, std::to_string(x).find('.') + 2)).c_str() : "-");
    out << line;
  }
  for (const auto& r : results) {
    if (r.feeder.empty()) continue;
    out << "\n" << r.mode << ": " << r.feeder << "\n";
    const conveyor::FeederStats& f = r.feeder_stats;
    if (!f.pipeline_cpus_reason.empty()) {
      out << "  " << r.mode << " pipeline CPUs:";
      if (f.pipeline_cpus.empty()) out << " any";
      for (const int cpu : f.pipeline_cpus) out << " " << cpu;
      out << " (" << f.pipeline_cpus_reason << ")\n";
    }
    if (!f.host_memory.empty()) out << "  " << r.mode << " batches: " << f.host_memory << "\n";
    if (!f.startup.empty()) out << "  " << r.mode << " GPU decoder: " << f.startup << "\n";
  }
  out << "\nimages/s counts every step from the first batch on; the other columns the timed steps after "
         "the warm-up ones\n(images/s over those alone:";
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, " %s %.1f", r.mode.c_str(), r.images_per_s_after_warmup_steps);
    out << line;
  }
  out << ")\n\nstart-up, not in the figures above:\n";
  for (const auto& r : results) {
    std::snprintf(line, sizeof line, "  %-9s trainer warm-up %.2f s, first batch %.3f s, first step %.3f s\n",
                  r.mode.c_str(), r.warmup_s, r.first_batch_s, r.first_step_s);
    out << line;
    if (r.feeder_warmup_s > 0) {
      std::snprintf(line, sizeof line, "  %-9s feeder warm-up %.2f s", r.mode.c_str(), r.feeder_warmup_s);
      out << line << (r.feeder_stats.warmup.empty() ? "" : " (" + r.feeder_stats.warmup + ")") << "\n";
    }
    if (!r.split_memory.empty()) out << "  " << r.mode << " split: " << r.split_memory << "\n";
    if (r.stall_reports > 0)
      out << "  " << r.mode << ": " << r.stall_reports << " stall report(s) on stderr\n";
  }
  out << "(data: waiting for or making the batch; copy: host to device; compute: the step on the device;\n"
         " wait: share of wall time spent on data; idle: share of wall time the "
      << (info.setup.placement.description.rfind("gpu", 0) == 0 ? "GPU" : "training thread")
      << " did not compute)\n";
  return out.str();
}

void write_json(const std::string& path, const RunInfo& info, const std::vector<ModeResult>& results) {
  using Json = nlohmann::ordered_json;  // ordered: the fields stay in the order written here
  const Options& o = info.setup.options;
  const conveyor::Ranks& ranks = info.setup.ranks;
  Json out = {{"device", info.setup.placement.description},
              {"model", o.model},
              {"precision", o.precision},
              {"data", o.data},
              {"images_in_data", info.setup.paths.size()},
              {"date", info.date},
              {"host", info.host},
              {"threads", o.threads},
              {"batch", o.batch},
              {"size", o.size},
              {"steps", o.steps},
              {"world_size", ranks.world_size},
              {"rank", ranks.rank},
              {"deterministic", o.deterministic},
              {"gpu_share", o.gpu_share},
              {"pipeline_deterministic", o.pipeline_deterministic},
              {"hardware_pipelining", o.hardware_pipelining},
              {"pipeline_nice", o.pipeline_nice},
              {"cuda_graph", info.setup.trainer.cuda_graph},
              {"prefetch_cuda_graph", info.setup.prefetch_graph},
              {"feeder_warmup", o.feeder_warmup},
              {"remember_split", o.remember_split},
              {"hardware_pool", o.hardware_pool},
              {"cpus", o.cpus},
              {"kernel_blocks", o.kernel_blocks},
              {"host_blocks_ahead", o.host_blocks_ahead},
              {"memory_near_gpu", o.memory_near_gpu},
              {"resident", o.resident},
              {"start_at_once", o.start_at_once},
              {"open_before_second", o.open_before_second},
              {"decode_threads", o.decode_threads},
              {"gpu_hybrid", o.gpu_hybrid},
              {"gpu_adapt", o.gpu_adapt},
              {"copy_whole_batch", o.copy_whole_batch},
              {"step_priority", o.step_priority},
              {"local_rank", ranks.local_rank},
              {"local_world_size", ranks.local_world_size},
              // After the runs: every GPU this process made a context on (a rank should hold its own alone).
              {"gpus_in_use", conveyor::gpus_in_use()},
              {"results", Json::array()}};
  for (const ModeResult& r : results) {
    Json paths = Json::object();
    for (const auto& [path, count] : r.feeder_stats.gpu_decode_paths) paths[path] = count;
    Json reasons = Json::object();
    for (const auto& [reason, count] : r.feeder_stats.fallback_reasons) reasons[reason] = count;
    Json parts = Json::array();
    for (const conveyor::SourcePart& p : r.source_parts)
      parts.push_back({{"name", p.name},
                       {"elements", p.elements},
                       {"busy_s", p.busy_seconds},
                       {"first_batch_s", p.first_batch_seconds}});
    out["results"].push_back(
        {{"mode", r.mode},
         {"timing_rule", "from_first_batch"},  // images_per_s: see modes.h
         {"images_per_s", r.images_per_s},
         {"images_per_s_after_warmup_steps", r.images_per_s_after_warmup_steps},
         {"step_ms_median", r.step_ms_median},
         {"step_ms_p95", r.step_ms_p95},
         {"data_wait_ms", r.data_wait_ms},
         {"copy_ms", r.copy_ms},
         {"compute_ms", r.compute_ms},
         {"data_wait_fraction", r.data_wait_fraction},
         {"idle_fraction", r.idle_fraction},
         {"speedup_over_feed", speedup(results, r)},
         {"warmup_s", r.warmup_s},
         {"first_batch_s", r.first_batch_s},
         {"first_step_s", r.first_step_s},
         {"loss_last", r.loss_last},  // NaN (a diverged run) is written as null
         {"pipeline_threads", r.pipeline_threads},
         {"gpu_decoded_fraction", r.gpu_decoded_fraction},
         {"feeder", r.feeder},
         // The feeder's GPU decoding over the whole mode, warm-up steps included.
         {"decoder",
          {{"gpu_share_end", r.feeder_stats.gpu_share},
           {"gpu_decoded", r.feeder_stats.gpu_decoded},
           {"host_s", r.feeder_stats.decode_host_seconds},
           {"gpu_s", r.feeder_stats.decode_gpu_seconds},
           {"wait_s", r.feeder_stats.decode_wait_seconds},
           {"check_s", r.feeder_stats.decode_check_seconds},
           {"submit_s", r.feeder_stats.decode_submit_seconds},
           {"resize_s", r.feeder_stats.decode_resize_seconds}}},
         {"feeder_warmup_s", r.feeder_warmup_s},
         {"split_memory", r.split_memory},
         {"stall_reports", r.stall_reports},
         // issue 41: how the GPU decoder came ready, what crossed, where the pipeline ran
         {"feeder_startup",
          {{"startup", r.feeder_stats.startup},
           {"decoder_ready_s", r.feeder_stats.decoder_ready_seconds},
           {"second_decoder_s", r.feeder_stats.second_decoder_seconds},
           {"first_stage_s", r.feeder_stats.first_stage_seconds}}},
         {"gpu_decode_paths", paths},
         {"fallback_reasons", reasons},
         {"cpu_fallbacks", r.feeder_stats.cpu_fallbacks},
         {"copied_bytes", r.feeder_stats.bytes},
         {"bytes_not_copied", r.feeder_stats.bytes_not_copied},
         {"pipeline_cpus", r.feeder_stats.pipeline_cpus},
         {"pipeline_cpus_reason", r.feeder_stats.pipeline_cpus_reason},
         {"host_memory", r.feeder_stats.host_memory},
         {"host_blocks_on_demand", r.feeder_stats.host_blocks_on_demand},
         {"host_blocks_on_demand_s", r.feeder_stats.host_blocks_on_demand_seconds},
         {"host_blocks_made_ahead", r.feeder_stats.host_blocks_made_ahead},
         {"warmup_waits_ms", r.warmup_waits_ms},
         {"source_parts", parts},
         {"losses", r.losses}});  // doubles written to round-trip exactly
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  // The data path need not be UTF-8: a byte that is not becomes U+FFFD rather than an exception.
  file << out.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  if (!file.flush()) throw conveyor::IoError("cannot write " + path);
}

}  // namespace feed_vs_prefetch
