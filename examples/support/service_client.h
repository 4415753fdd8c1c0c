// How a program whose pipeline ends on the GPU asks the data service for the chain it would otherwise run
// itself (examples/feed_vs_prefetch, bench/pipeline/pipeline_throughput with --service): the standard chain's
// parameters read off the program's own maps, and the job it joins. Header-only, like feeder_options.h: the
// benchmark includes it without linking the examples' library.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/dataset.h"
#include "conveyor/service/client.h"

namespace example_support {

// The standard chain (conveyor-worker's) over `data` at `size`: flip and distort are on it only where the
// program's maps still hold them (a GPU that runs them took them off the chain), with the program's
// probabilities and strengths (flip 0.5; brightness, contrast, saturation 0.4).
inline conveyor::service::ChainSpec standard_service_chain(const std::string& data, int size, std::uint64_t seed,
                                                           const std::vector<conveyor::SampleOp>& maps) {
  auto has = [&](const std::string& name) {
    return std::any_of(maps.begin(), maps.end(), [&](const conveyor::SampleOp& op) { return op.name == name; });
  };
  conveyor::service::ChainSpec chain;
  chain.parameters = {{"data", data},
                      {"size", std::to_string(size)},
                      {"flip", has("flip_horizontal") ? "0.5" : "0"},
                      {"distort", has("distort") ? "0.4,0.4,0.4" : "0"}};
  chain.seed = seed;
  return chain;
}

// The job this client joins: its name (empty: the chain's fingerprint), its token, and TLS from a folder's
// ca.pem, cert.pem and key.pem (empty: none).
inline void join_service_job(conveyor::service::ServiceOptions& options, const std::string& job,
                             const std::string& token, const std::string& tls_folder) {
  options.job = job;
  options.token = token;
  if (!tls_folder.empty()) options.tls = conveyor::service::Tls::from_folder(tls_folder);
}

}  // namespace example_support
