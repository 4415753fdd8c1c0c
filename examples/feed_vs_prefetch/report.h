// Printing and saving what feed_vs_prefetch measured.
#pragma once

#include <string>
#include <vector>

#include "modes.h"

namespace feed_vs_prefetch {

struct RunInfo {
  const Setup& setup;  // what every mode ran with: the command line, the placement, the ranks, the data
  std::string date;    // UTC, ISO 8601
  std::string host;
};

// One table: images/s, step time median and p95, the split of a step, idle fractions, speed-up over feed.
std::string format_table(const RunInfo& info, const std::vector<ModeResult>& results);

// {"device": ..., "threads": ..., "batch": ..., "results": [{"mode": ..., "images_per_s": ...}, ...]}
void write_json(const std::string& path, const RunInfo& info, const std::vector<ModeResult>& results);

}  // namespace feed_vs_prefetch
