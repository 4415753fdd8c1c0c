// service_trainer: a trainer as the service's process tests need one. It reads a job's batches from the data
// service and writes one line per sample, "epoch index label checksum" (XXH3 of its pixels), flushed batch by
// batch, its iterator's state after each batch (atomically), and at the end its PipelineStats. It can stop
// after N batches (a trainer that dies, to be resumed), pause after each batch (a slow step: the workers are
// ahead, with splits in hand, when one is killed), and resume from a state file.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "conveyor/batch_checksum.h"
#include "conveyor/iterator_state.h"
#include "conveyor/service/client.h"

int main(int argc, char** argv) {
  std::string url, data, log, state_out, resume, token, job;
  int size = 24, rank = 0, world = 1, local_threads = 0;
  std::size_t batch = 4, split = 2, stop_after = 0;
  std::uint64_t epochs = 2, seed = 7;
  long long pause_ms = 0, timeout_ms = 3000;
  bool deterministic = false, fallback = false;
  CLI::App app("service_trainer: reads a job's batches from the data service, logging every sample");
  app.add_option("--service", url)->required();
  app.add_option("--data", data)->required();
  app.add_option("--log", log)->required();
  app.add_option("--size", size);
  app.add_option("--batch", batch);
  app.add_option("--split", split);
  app.add_option("--epochs", epochs);
  app.add_option("--seed", seed);
  app.add_option("--rank", rank);
  app.add_option("--world", world);
  app.add_option("--local-threads", local_threads);
  app.add_option("--fallback", fallback);
  app.add_option("--deterministic", deterministic);
  app.add_option("--token", token);
  app.add_option("--job", job);
  app.add_option("--state-out", state_out);
  app.add_option("--resume", resume);
  app.add_option("--stop-after", stop_after, "exit after this many batches (0: run to the end)");
  app.add_option("--pause-ms", pause_ms, "sleep after each batch");
  app.add_option("--timeout-ms", timeout_ms);
  CLI11_PARSE(app, argc, argv);
  try {
    conveyor::service::ServiceOptions options;
    options.batch_size = batch;
    options.split_batches = split;
    options.epochs = epochs;
    options.ranks.rank = rank;
    options.ranks.world_size = world;
    options.local_threads = local_threads;
    options.local_fallback = fallback;
    options.deterministic = deterministic;
    options.token = token;
    options.job = job;
    options.timeout = std::chrono::milliseconds(timeout_ms);
    const conveyor::service::ChainSpec chain{
        .name = "standard", .parameters = {{"data", data}, {"size", std::to_string(size)}}, .seed = seed};
    const conveyor::BatchedDataset batches = conveyor::service::from_service(url, chain, options);
    conveyor::BatchIterator it =
        resume.empty() ? batches.begin() : batches.begin(conveyor::IteratorState::load(resume));
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(log.c_str(), "a"), std::fclose);
    if (!out) throw std::runtime_error("cannot write " + log);
    std::size_t taken = 0;
    while (std::optional<conveyor::Batch> b = it.next()) {
      for (std::size_t i = 0; i < b->size(); ++i) {
        conveyor::BatchChecksum sum;
        sum.add({b->image(i).data, b->image(i).shape().bytes()});
        const conveyor::SampleInfo& s = b->samples()[i];
        if (!s.padding)
          std::fprintf(out.get(), "%llu %llu %lld %s\n", static_cast<unsigned long long>(s.epoch),
                       static_cast<unsigned long long>(s.index), static_cast<long long>(b->labels()[i]),
                       sum.hex().c_str());
      }
      std::fflush(out.get());
      if (!state_out.empty()) it.state().save(state_out);  // after the lines: never ahead of them
      if (++taken == stop_after) break;
      if (pause_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
    std::printf("%s", conveyor::format_stats(it.stats()).c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "service_trainer: %s\n", error.what());
    return 1;
  }
  return 0;
}
