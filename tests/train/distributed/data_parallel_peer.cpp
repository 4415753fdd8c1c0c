// One rank of the data-parallel tests, started by a launcher (mpirun, scripts/launch.sh, tests/support/
// two_hosts.sh with mpirun) or alone. It trains a small network on the synthetic quadrant problem
// (tests/train/synthetic_batches.h): step s's global batch of world x B images is the same on every rank,
// and rank r trains on its r-th slice of B (or, with --same-batch, on the whole of it), as a sharded pipeline
// would hand them out. So a run of N ranks can be checked against one process stepping on the global batch.
//
// Prints one line per step, "step S loss L" (L averaged over the ranks), then "final loss A -> B" (the
// mean of the first and of the last three steps' averaged losses) and "rank R gpus in use: G..." (the GPUs
// the process holds a CUDA context on), and, with --checkpoint DIR, saves the rank's weights and momentum as
// DIR/rank<R>.json (+ safetensors). Faults on purpose, for the tests that end runs: --die-at-step S (the rank
// kills itself with SIGKILL before step S) and --hang-at-step S (it stops taking part, sleeping, before step
// S).
//
//   data_parallel_peer [--device cpu|gpu] [--steps N] [--batch B] [--network plain|batch-norm]
//                      [--global] [--same-batch] [--world-size N] [--checkpoint DIR] [--rank-of-fault R]
//                      [--die-at-step S] [--hang-at-step S] [--collective-timeout-ms T]
//                      [--connect-timeout-ms T] [--bucket-kib K]
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/cuda/device.h"
#include "conveyor/ranks.h"
#include "conveyor/train/data_parallel.h"
#include "tests/train/synthetic_batches.h"

namespace {

using namespace conveyor;

constexpr ImageShape kShape{16, 16, 1};

struct Options {
  std::string device = "cpu";
  int steps = 6;
  int batch = 8;  // per rank
  std::string network = "plain";
  bool global = false;      // one process, batch world x B: the reference a data-parallel run must follow
  bool same_batch = false;  // every rank steps on the whole global batch
  int world_size = 0;       // > 0: the ranks say this world size, whatever the launcher's is
  std::string checkpoint;
  int rank_of_fault = 1;
  int die_at_step = -1, hang_at_step = -1;
  int collective_timeout_ms = 60'000, connect_timeout_ms = 120'000;
  int bucket_kib = 4096;
};

// device: the GPU this rank trains on (its local rank's), or -1 for the CPU.
train::TrainerOptions trainer_options(const Options& o, int batch, int device) {
  using namespace train::layers;
  train::TrainerOptions t;
  if (o.network == "plain")
    t.network = {conv(8, 3), relu(), max_pool(2, 2), conv(16, 3, 2), relu(), global_avg_pool(), dense(4)};
  else
    t.network = {conv(8, 3), batch_norm(),      relu(),  max_pool(2, 2), conv(16, 3, 2), batch_norm(),
                 relu(),     global_avg_pool(), dense(4)};
  t.num_classes = 4;
  t.input = kShape;
  t.batch = batch;
  t.learning_rate = 0.05;
  t.precision = train::Precision::fp32;
  t.device = device;
  t.seed = 3;
  t.deterministic = true;  // the same algorithms in every process, so only the reduction can differ
  return t;
}

// Images [first, first + count) of `from` as a batch of their own.
testing::HostBatch slice(const testing::HostBatch& from, std::size_t first, std::size_t count) {
  testing::HostBatch out{PageableBatchBuffer(count, from.buffer.shape()), count};
  for (std::size_t i = 0; i < count; ++i) {
    std::memcpy(out.buffer.slot(i).data, from.buffer.slot(first + i).data, from.buffer.shape().bytes());
    out.buffer.labels()[i] = from.buffer.labels()[first + i];
  }
  return out;
}

DeviceBatch staged(const testing::HostBatch& batch, const train::TrainerOptions& t) {
  return t.device >= 0 ? batch.on_gpu(t.device) : batch.staged();
}

// Milliseconds since the epoch: when a fault happened, for the measurements that time how long the others
// take to end (bench/train/cpu_data_parallel_faults.sh).
long long unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void fault_if_asked(const Options& o, int rank, int step) {
  if (rank != o.rank_of_fault) return;
  if (step == o.die_at_step) {
    std::printf("rank %d (pid %d) is killed before step %d at %lld ms\n", rank, static_cast<int>(::getpid()),
                step, unix_ms());
    std::fflush(stdout);
    ::raise(SIGKILL);
  }
  if (step == o.hang_at_step) {
    std::printf("rank %d (pid %d) stops taking part before step %d at %lld ms\n", rank,
                static_cast<int>(::getpid()), step, unix_ms());
    std::fflush(stdout);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

void print_final(const std::vector<double>& losses) {
  const std::size_t n = std::min<std::size_t>(3, losses.size());
  double first = 0, last = 0;
  for (std::size_t i = 0; i < n; ++i) first += losses[i], last += losses[losses.size() - n + i];
  std::printf("final loss %.6f -> %.6f\n", first / static_cast<double>(n), last / static_cast<double>(n));
}

int run(const Options& o) {
  Ranks ranks = ranks_from_environment();
  if (o.world_size > 0) ranks.world_size = o.world_size;
  const int world = ranks.world_size;
  std::vector<double> losses;
  if (o.global) {  // the reference: one plain trainer on every rank's images at once
    train::Trainer trainer(trainer_options(o, world * o.batch, o.device == "gpu" ? 0 : -1));
    const train::TrainerOptions& t = trainer.options();
    for (int s = 0; s < o.steps; ++s) {
      const testing::HostBatch batch = testing::quadrant_batch(static_cast<std::size_t>(world * o.batch),
                                                               kShape, 500 + static_cast<std::uint64_t>(s));
      trainer.step(staged(batch, t));
      losses.push_back(trainer.last_step().loss);
      std::printf("step %d loss %.9g\n", s, losses.back());
    }
    if (!o.checkpoint.empty()) trainer.save_checkpoint(std::filesystem::path(o.checkpoint) / "global.json");
    print_final(losses);
    return 0;
  }
  const int batch = o.same_batch ? world * o.batch : o.batch;
  train::DataParallelTrainer trainer(
      trainer_options(o, batch, o.device == "gpu" ? ranks.local_rank : -1), ranks,
      {.bucket_bytes = static_cast<std::size_t>(o.bucket_kib) << 10,
       .connect_timeout = std::chrono::milliseconds(o.connect_timeout_ms),
       .collective_timeout = std::chrono::milliseconds(o.collective_timeout_ms)});
  trainer.warmup();
  if (ranks.is_main()) std::printf("%s\n", trainer.placement().c_str());
  const train::TrainerOptions& t = trainer.trainer().options();
  for (int s = 0; s < o.steps; ++s) {
    fault_if_asked(o, ranks.rank, s);
    const testing::HostBatch global = testing::quadrant_batch(static_cast<std::size_t>(world * o.batch),
                                                              kShape, 500 + static_cast<std::uint64_t>(s));
    const testing::HostBatch mine = o.same_batch
                                        ? slice(global, 0, global.size)
                                        : slice(global, static_cast<std::size_t>(ranks.rank * o.batch),
                                                static_cast<std::size_t>(o.batch));
    trainer.step(staged(mine, t));
    losses.push_back(trainer.last_step().loss);  // a collective: every rank asks
    std::printf("step %d loss %.9g\n", s, losses.back());
    std::fflush(stdout);
  }
  trainer.synchronize();
  if (!o.checkpoint.empty())
    trainer.trainer().save_checkpoint(std::filesystem::path(o.checkpoint) /
                                      ("rank" + std::to_string(ranks.rank) + ".json"));
  trainer.barrier();
  print_final(losses);
  // The GPUs this process made a context on: a rank on GPU 1 should hold GPU 1 alone.
  std::string gpus;
  for (const int gpu : gpus_in_use()) gpus += (gpus.empty() ? "" : " ") + std::to_string(gpu);
  std::printf("rank %d gpus in use: %s\n", ranks.rank, gpus.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("data_parallel_peer: one rank of the data-parallel tests");
  app.add_option("--device", o.device)->check(CLI::IsMember({"cpu", "gpu"}));
  app.add_option("--steps", o.steps)->check(CLI::Range(1, 100000));
  app.add_option("--batch", o.batch)->check(CLI::Range(1, 4096));
  app.add_option("--network", o.network)->check(CLI::IsMember({"plain", "batch-norm"}));
  app.add_flag("--global", o.global);
  app.add_flag("--same-batch", o.same_batch);
  app.add_option("--world-size", o.world_size)->check(CLI::Range(1, 4096));
  app.add_option("--checkpoint", o.checkpoint);
  app.add_option("--rank-of-fault", o.rank_of_fault);
  app.add_option("--die-at-step", o.die_at_step);
  app.add_option("--hang-at-step", o.hang_at_step);
  app.add_option("--collective-timeout-ms", o.collective_timeout_ms)->check(CLI::Range(1, 3'600'000));
  app.add_option("--connect-timeout-ms", o.connect_timeout_ms)->check(CLI::Range(1, 3'600'000));
  app.add_option("--bucket-kib", o.bucket_kib)->check(CLI::Range(1, 1 << 20));
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "data_parallel_peer: %s\n", error.what());
    return 1;
  }
}
