// The time series a soak run records and the verdict drawn from it: does resident memory stay flat, does
// throughput stay steady.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace soak {

// One sampling interval.
struct Sample {
  double t_s = 0;            // seconds since the first batch
  std::uint64_t images = 0;  // delivered so far
  double images_per_s = 0;   // over this interval
  double resident_mb = 0;    // resident set size at the end of the interval
  std::uint64_t pool_buffers = 0;
  std::uint64_t skipped = 0;  // bad files dropped so far (on_error = skip)
};

struct Verdict {
  double warmup_s = 0;                 // samples before this are left out of the verdict
  double memory_slope_mb_per_min = 0;  // least-squares slope of resident memory after warm-up
  double memory_growth_mb = 0;         // slope x the measured window
  double memory_mean_mb = 0;
  double memory_max_mb = 0;
  bool memory_flat = false;             // growth under max(16 MB, 2 % of the mean)
  double throughput_mean = 0;           // images/s after warm-up
  double throughput_cv = 0;             // coefficient of variation of the per-interval rates
  double throughput_last_vs_first = 0;  // mean of the last quarter / mean of the first quarter
  bool throughput_steady = false;       // last vs first within 15 %
  std::size_t samples_used = 0;
};

// The verdict over the samples after the first `warmup_fraction` of the run (at least one sample).
Verdict judge(const std::vector<Sample>& samples, double warmup_fraction = 0.2);

// CSV: one line per sample.
std::string to_csv(const std::vector<Sample>& samples);

// The run's description (an object) with the samples and the verdict added as "samples" and "verdict".
nlohmann::ordered_json to_json(nlohmann::ordered_json run, const std::vector<Sample>& samples,
                               const Verdict& verdict);

// A human-readable line.
std::string describe(const Verdict& verdict);

}  // namespace soak
