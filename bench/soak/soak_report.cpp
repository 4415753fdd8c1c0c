#include "soak_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace soak {
namespace {

double mean_of(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

}  // namespace

Verdict judge(const std::vector<Sample>& samples, double warmup_fraction) {
  Verdict verdict;
  if (samples.empty()) return verdict;
  const auto first = std::min(
      samples.size() - 1, static_cast<std::size_t>(warmup_fraction * static_cast<double>(samples.size())));
  verdict.warmup_s = samples[first].t_s;
  std::vector<double> t, memory, rate;
  for (std::size_t i = first; i < samples.size(); ++i) {
    t.push_back(samples[i].t_s);
    memory.push_back(samples[i].resident_mb);
    rate.push_back(samples[i].images_per_s);
  }
  verdict.samples_used = t.size();
  verdict.memory_mean_mb = mean_of(memory);
  verdict.memory_max_mb = *std::max_element(memory.begin(), memory.end());
  // Least-squares slope of memory over time.
  const double t_mean = mean_of(t);
  double covariance = 0, variance = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    covariance += (t[i] - t_mean) * (memory[i] - verdict.memory_mean_mb);
    variance += (t[i] - t_mean) * (t[i] - t_mean);
  }
  const double slope_per_s = variance > 0 ? covariance / variance : 0;
  verdict.memory_slope_mb_per_min = 60 * slope_per_s;
  verdict.memory_growth_mb = slope_per_s * (t.back() - t.front());
  verdict.memory_flat = verdict.memory_growth_mb < std::max(16.0, 0.02 * verdict.memory_mean_mb);

  verdict.throughput_mean = mean_of(rate);
  double squares = 0;
  for (const double r : rate) squares += (r - verdict.throughput_mean) * (r - verdict.throughput_mean);
  const double deviation = std::sqrt(squares / static_cast<double>(rate.size()));
  verdict.throughput_cv = verdict.throughput_mean > 0 ? deviation / verdict.throughput_mean : 0;
  const std::size_t quarter = std::max<std::size_t>(1, rate.size() / 4);
  const double head =
      mean_of(std::vector<double>(rate.begin(), rate.begin() + static_cast<std::ptrdiff_t>(quarter)));
  const double tail =
      mean_of(std::vector<double>(rate.end() - static_cast<std::ptrdiff_t>(quarter), rate.end()));
  verdict.throughput_last_vs_first = head > 0 ? tail / head : 0;
  verdict.throughput_steady = std::abs(verdict.throughput_last_vs_first - 1) <= 0.15;
  return verdict;
}

std::string to_csv(const std::vector<Sample>& samples) {
  std::string csv = "t_s,images,images_per_s,resident_mb,pool_buffers,skipped\n";
  for (const Sample& s : samples) {
    char line[160];
    std::snprintf(line, sizeof line, "%.2f,%llu,%.1f,%.2f,%llu,%llu\n", s.t_s,
                  static_cast<unsigned long long>(s.images), s.images_per_s, s.resident_mb,
                  static_cast<unsigned long long>(s.pool_buffers),
                  static_cast<unsigned long long>(s.skipped));
    csv += line;
  }
  return csv;
}

nlohmann::ordered_json to_json(nlohmann::ordered_json run, const std::vector<Sample>& samples,
                               const Verdict& v) {
  run["samples"] = nlohmann::ordered_json::array();
  for (const Sample& s : samples)
    run["samples"].push_back({{"t_s", s.t_s},
                              {"images", s.images},
                              {"images_per_s", s.images_per_s},
                              {"resident_mb", s.resident_mb},
                              {"pool_buffers", s.pool_buffers},
                              {"skipped", s.skipped}});
  run["verdict"] = {{"warmup_s", v.warmup_s},
                    {"samples_used", v.samples_used},
                    {"memory_slope_mb_per_min", v.memory_slope_mb_per_min},
                    {"memory_growth_mb", v.memory_growth_mb},
                    {"memory_mean_mb", v.memory_mean_mb},
                    {"memory_max_mb", v.memory_max_mb},
                    {"memory_flat", v.memory_flat},
                    {"throughput_mean", v.throughput_mean},
                    {"throughput_cv", v.throughput_cv},
                    {"throughput_last_vs_first", v.throughput_last_vs_first},
                    {"throughput_steady", v.throughput_steady}};
  return run;
}

std::string describe(const Verdict& v) {
  char text[400];
  std::snprintf(text, sizeof text,
                "memory %s: %.1f MB mean, %.1f MB max, slope %+.3f MB/min (%+.2f MB over the window); "
                "throughput %s: %.0f img/s mean, CV %.3f, last/first quarter %.3f",
                v.memory_flat ? "flat" : "GROWING", v.memory_mean_mb, v.memory_max_mb,
                v.memory_slope_mb_per_min, v.memory_growth_mb, v.throughput_steady ? "steady" : "DRIFTING",
                v.throughput_mean, v.throughput_cv, v.throughput_last_vs_first);
  return text;
}

}  // namespace soak
