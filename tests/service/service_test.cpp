// The data service whole, in one process over loopback: a dispatcher, workers and trainers as objects, every
// byte through gRPC. Every sample of every epoch exactly once, batches bit for bit a local chain's in
// deterministic mode, a resumed trainer going on where it stopped, the trainer's own cores first, refusals
// with their reasons, and a trainer that sleeps holding the workers' memory where it is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <vector>

#include "conveyor/batch_checksum.h"
#include "conveyor/defer.h"
#include "conveyor/ops.h"
#include "conveyor/service/client.h"
#include "conveyor/service/dispatcher.h"
#include "conveyor/service/service_error.h"
#include "conveyor/service/status.h"
#include "conveyor/service/worker.h"
#include "src/service/common/shared_region.h"
#include "support/watchdog.h"
#include "tests/pipeline/fixtures.h"

namespace conveyor::service {
namespace {

using namespace std::chrono_literals;

constexpr int kClasses = 3, kPerClass = 12;  // 36 images
constexpr int kSize = 24;

// A dispatcher and `workers` workers on loopback, each worker's pipelines on one thread.
struct Service {
  explicit Service(int workers, const std::filesystem::path& journal = {}) {
    DispatcherOptions o;
    o.listen_host = "127.0.0.1";
    o.work_dir = journal;
    o.worker_timeout = 1500ms;
    dispatcher = std::make_unique<Dispatcher>(o);
    for (int i = 0; i < workers; ++i) add_worker();
    wait_for_workers(workers);
  }
  std::string url() const { return "grpc://127.0.0.1:" + std::to_string(dispatcher->port()); }
  Worker& add_worker(ChainRegistry chains = {}, std::optional<std::size_t> shared_memory_bytes = {}) {
    WorkerOptions o;
    o.dispatcher = url();
    o.listen_host = "127.0.0.1";
    o.threads = 1;
    o.chains = std::move(chains);
    o.heartbeat = 200ms;
    if (shared_memory_bytes) o.shared_memory_bytes = *shared_memory_bytes;
    this->workers.push_back(std::make_unique<Worker>(o));
    return *this->workers.back();
  }
  void wait_for_workers(int n) const {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      int alive = 0;
      for (const WorkerStatus& w : service_status(url()).workers) alive += w.alive ? 1 : 0;
      if (alive >= n) return;
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "workers did not register";
  }
  std::unique_ptr<Dispatcher> dispatcher;
  std::vector<std::unique_ptr<Worker>> workers;
};

class DataService : public ::testing::Test {
 protected:
  void SetUp() override { folder_ = testing::make_jpeg_folder(dir_, kClasses, kPerClass, 40, 56); }

  ChainSpec chain(std::uint64_t seed = 7) const {
    return {.name = "standard",
            .parameters = {{"data", folder_.string()}, {"size", std::to_string(kSize)}},
            .seed = seed};
  }
  static ServiceOptions options(std::size_t batch = 4, std::uint64_t epochs = 2) {
    ServiceOptions o;
    o.batch_size = batch;
    o.epochs = epochs;
    o.split_batches = 2;
    o.local_fallback = false;
    o.timeout = 3000ms;
    return o;
  }

  testing::TempDir dir_;
  std::filesystem::path folder_;
};

struct Seen {
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> times;  // (epoch, index) -> deliveries
  std::size_t batches = 0;
  PipelineStats stats;
  std::optional<IteratorState> state;
};

// Takes `limit` batches (all: 0) from `it`, counting each sample.
void take(BatchIterator& it, Seen& seen, std::size_t limit = 0, std::chrono::milliseconds pause = 0ms) {
  while (limit == 0 || seen.batches < limit) {
    std::optional<Batch> batch = it.next();
    if (!batch) break;
    ++seen.batches;
    for (const SampleInfo& s : batch->samples())
      if (!s.padding) ++seen.times[{s.epoch, s.index}];
    if (pause > 0ms) std::this_thread::sleep_for(pause);
  }
  seen.stats = it.stats();
  seen.state = it.state();
}

void expect_each_once(const Seen& seen, std::uint64_t epochs, std::uint64_t samples) {
  EXPECT_EQ(seen.times.size(), epochs * samples);
  for (const auto& [who, times] : seen.times)
    EXPECT_EQ(times, 1) << "epoch " << who.first << " index " << who.second;
}

TEST_F(DataService, TwoWorkersDeliverEverySampleOfEveryEpochOnce) {
  const testing::Watchdog watchdog(60s, "two workers, one trainer");
  Service service(2);
  BatchIterator it = from_service(service.url(), chain(), options()).begin();
  Seen seen;
  take(it, seen);
  expect_each_once(seen, 2, kClasses * kPerClass);
  EXPECT_EQ(seen.batches, 2u * 9u);
  std::uint64_t remote = 0, workers = 0;
  for (const SourcePart& part : seen.stats.source_parts) {
    remote += part.elements;
    workers += part.elements > 0 ? 1 : 0;
    // Workers of this host lend the pixels through shared memory; the socket carries the headers.
    EXPECT_GE(part.shared_bytes, part.elements * kSize * kSize * 3) << part.name;
    EXPECT_LT(part.wire_bytes, part.elements * kSize * kSize * 3 / 4) << part.name;
  }
  EXPECT_EQ(remote, 2u * kClasses * kPerClass);
  EXPECT_EQ(workers, 2u) << "splits go to the worker with the fewest in hand";
}

TEST_F(DataService, BatchesLargerThanGrpcsDefaultMessageLimitArrive) {
  const testing::Watchdog watchdog(60s, "large batches");
  Service service(1);
  ChainSpec big = chain();
  big.parameters["size"] = "300";  // 16 x 300 x 300 x 3: 4.3 MB a batch, over gRPC's default 4 MB
  Seen seen;
  BatchIterator it = from_service(service.url(), big, options(16, 1)).begin();
  take(it, seen);
  expect_each_once(seen, 1, kClasses * kPerClass);
  ASSERT_FALSE(seen.stats.source_parts.empty());
  EXPECT_EQ(seen.stats.source_parts[0].failures, 0u) << seen.stats.source_note;
}

TEST_F(DataService, DeterministicBatchesAreTheLocalChainsBitForBit) {
  const testing::Watchdog watchdog(60s, "deterministic");
  Service service(2);
  ServiceOptions o = options(4, 2);  // 36 samples: 9 whole batches an epoch
  o.deterministic = true;
  o.prefetch = 2;  // few buffers: batches decoded out of the consumer's order would take them all (a hang)
  std::vector<std::uint64_t> remote, local;
  for (const Batch& batch : from_service(service.url(), chain(), o)) {
    BatchChecksum sum;
    sum.add(batch);
    remote.push_back(sum.value());
  }
  const Chain c = standard_chain(chain().parameters);
  for (const Batch& batch : c.samples.shuffle()
                                .shard(1, 0, ShardRemainder::pad)
                                .repeat(2)
                                .with_options({.threads = 2, .seed = 7})
                                .batch(4, c.batching)) {
    BatchChecksum sum;
    sum.add(batch);
    local.push_back(sum.value());
  }
  EXPECT_EQ(remote, local);
}

// Deterministic, with the trainer's own cores making splits too: a worker's later split can arrive whole
// while the consumer is still on an earlier local one. Its first frame becomes the one to decode only when
// the consumer moves on, so the consumer's delivery must wake the decoding thread (it did not: a hang).
TEST_F(DataService, DeterministicWithTheTrainersOwnCoresDecodesAWorkersSplitThatArrivedEarly) {
  const testing::Watchdog watchdog(60s, "deterministic with local splits");
  Service service(1);
  ServiceOptions o = options(4, 3);
  o.split_batches = 9;  // an epoch a split: the trainer's cores take the first two, the worker the last
  o.deterministic = true;
  o.local_threads = 1;
  // The worker must take part for the run to mean anything; on a loaded machine (CI under a sanitizer) the
  // trainer's cores can take all three splits before the worker asks, so runs go on until one it served.
  const std::size_t per_run = 3u * kClasses * kPerClass / 4;
  std::uint64_t remote = 0;
  for (int run = 0; run < 12 && (run < 3 || remote == 0); ++run) {
    o.job = "early split " + std::to_string(run);
    BatchIterator it = from_service(service.url(), chain(), o).begin();
    Seen seen;
    take(it, seen, 0, 10ms);  // a consumer slower than the worker: its split arrives whole meanwhile
    EXPECT_EQ(seen.batches, per_run) << "run " << run;
    expect_each_once(seen, 3, kClasses * kPerClass);
    for (const SourcePart& part : seen.stats.source_parts)
      if (part.name != "local") remote += part.elements;
  }
  EXPECT_GT(remote, 0u) << "the worker made none of the splits in twelve runs";
}

// A job's batches, in deterministic order, as checksums; and the figures of the run.
std::vector<std::uint64_t> checksums(const BatchedDataset& batches, PipelineStats* stats) {
  std::vector<std::uint64_t> out;
  BatchIterator it = batches.begin();
  while (std::optional<Batch> batch = it.next()) {
    BatchChecksum sum;
    sum.add(*batch);
    out.push_back(sum.value());
  }
  *stats = it.stats();
  return out;
}

TEST_F(DataService, AWorkerOfThisHostLendsBatchesThroughSharedMemoryOrSendsThemAsAsked) {
  const testing::Watchdog watchdog(60s, "shared memory");
  ServiceOptions o = options(4, 2);
  o.deterministic = true;
  o.prefetch = 2;
  constexpr std::uint64_t kPixels = 2 * kClasses * kPerClass * kSize * kSize * 3;
  // One worker a run: its region of shared memory (nullopt: the default size), and the trainer's choice.
  struct Run {
    std::optional<std::size_t> region;
    bool trainer_shares = true;
    bool lent = false;  // expected: the pixels came through shared memory, else through the socket
  };
  const Run runs[] = {
      {.region = std::nullopt, .lent = true},
      {.region = std::nullopt, .trainer_shares = false},
      // Room for no batch (4 samples of 24 x 24 x 3 and their labels take two pages): each comes from
      // ordinary memory, through the socket.
      {.region = detail::SharedRegion::kHeaderBytes + 4096},
      {.region = 0},  // the worker shares no memory
  };
  std::vector<std::uint64_t> first;
  for (const Run& run : runs) {
    SCOPED_TRACE(::testing::Message() << "region " << (run.region ? std::to_string(*run.region) : "default")
                                      << ", trainer " << run.trainer_shares);
    Service service(0);
    service.add_worker({}, run.region);
    service.wait_for_workers(1);
    o.shared_memory = run.trainer_shares;
    PipelineStats stats;
    const std::vector<std::uint64_t> sums = checksums(from_service(service.url(), chain(), o), &stats);
    EXPECT_EQ(sums.size(), 18u);
    if (first.empty()) first = sums;
    EXPECT_EQ(sums, first) << "the same batches whichever way they came";
    ASSERT_EQ(stats.source_parts.size(), 1u);
    const SourcePart& part = stats.source_parts[0];
    const WorkerCounters worker = service.workers[0]->counters();
    if (run.lent) {
      EXPECT_GE(part.shared_bytes, kPixels);
      EXPECT_LT(part.wire_bytes, kPixels / 4) << "headers only";
      EXPECT_GE(worker.bytes_lent, kPixels);
    } else {
      EXPECT_EQ(part.shared_bytes, 0u);
      EXPECT_GT(part.wire_bytes, kPixels);
      EXPECT_EQ(worker.bytes_lent, 0u);
    }
  }
}

TEST_F(DataService, ATrainerResumedFromItsStateGetsTheRestOnce) {
  const testing::Watchdog watchdog(60s, "resume");
  Service service(2);
  const BatchedDataset batches = from_service(service.url(), chain(), options());
  Seen first;
  {
    BatchIterator it = batches.begin();
    take(it, first, 7);
  }
  const IteratorState saved = IteratorState::from_json(first.state->to_json());
  Seen rest;
  BatchIterator resumed = batches.begin(saved);
  take(resumed, rest);
  for (const auto& [who, times] : first.times) rest.times[who] += times;
  expect_each_once(rest, 2, kClasses * kPerClass);
  EXPECT_EQ(rest.stats.batches, 18u);  // counting the first trainer's 7
}

TEST_F(DataService, RanksOfOneJobGetTheirOwnEqualShares) {
  const testing::Watchdog watchdog(60s, "two ranks");
  Service service(2);
  Seen all;
  std::vector<std::size_t> batches;
  for (int rank = 0; rank < 2; ++rank) {
    ServiceOptions o = options(4, 1);
    o.ranks.rank = rank;
    o.ranks.world_size = 2;
    BatchIterator it = from_service(service.url(), chain(), o).begin();
    Seen mine;
    take(it, mine);
    batches.push_back(mine.batches);
    for (const auto& [who, times] : mine.times) all.times[who] += times;
  }
  EXPECT_EQ(batches[0], batches[1]);
  expect_each_once(all, 1, kClasses * kPerClass);
}

TEST_F(DataService, TheTrainersOwnCoresTakeSplitsFirstAndAloneWhenNoWorkerIsThere) {
  const testing::Watchdog watchdog(60s, "local first");
  Service service(1);
  ServiceOptions o = options(4, 6);  // long enough for the worker to take part, however slowly it starts
  o.local_threads = 1;
  // As in the early-split test: on a loaded machine the trainer's cores may make every split before the
  // worker asks, so runs go on (at most 12) until one the worker took part in; each is checked whole.
  bool worker_took_part = false;
  for (int run = 0; run < 12 && !worker_took_part; ++run) {
    o.job = "local first " + std::to_string(run);
    Seen seen;
    BatchIterator it = from_service(service.url(), chain(), o).begin();
    take(it, seen);
    expect_each_once(seen, 6, kClasses * kPerClass);
    std::uint64_t local = 0;
    for (const SourcePart& part : seen.stats.source_parts)
      if (part.name == "local") local += part.elements;
    EXPECT_GT(local, 0u) << "run " << run;
    worker_took_part = local < 6u * kClasses * kPerClass;
  }
  EXPECT_TRUE(worker_took_part) << "the trainer's cores made every split of twelve runs";

  Service empty(0);
  o.local_threads = 0;
  o.local_fallback = true;
  Seen alone;
  BatchIterator fallback = from_service(empty.url(), chain(), o).begin();
  take(fallback, alone);
  expect_each_once(alone, 6, kClasses * kPerClass);
  EXPECT_NE(alone.stats.source_note.find("no worker reachable"), std::string::npos)
      << alone.stats.source_note;
}

// Defers every other sample it is asked about, as a DeviceFeeder's split gives its GPU decoder a share.
class EveryOtherSample final : public DeferPolicy {
 public:
  bool should_defer(const Sample&) noexcept override { return asked.fetch_add(1) % 2 == 0; }
  void declined(const Sample&, const char*) noexcept override { ++declined_count; }
  void spent(bool, std::chrono::nanoseconds) noexcept override {}
  std::atomic<int> asked{0}, declined_count{0};
};

// Every batch of `dataset` with `policy` as the consumer's deferral, each sample counted into `seen`: how
// many samples were deferred.
std::size_t take_deferring(const BatchedDataset& dataset, const std::shared_ptr<DeferPolicy>& policy,
                           Seen& seen) {
  std::size_t deferred = 0;
  BatchIterator it = dataset.with_options({.defer = policy}).begin();
  while (std::optional<Batch> batch = it.next()) {
    ++seen.batches;
    deferred += batch->deferred_count();
    for (const SampleInfo& s : batch->samples())
      if (!s.padding) ++seen.times[{s.epoch, s.index}];
  }
  return deferred;
}

// Issue 40, local first: the splits the trainer makes itself leave to its GPU decoder what the consumer's
// deferral asks (the pipeline options a DeviceFeeder sets), and the workers' batches come decoded.
TEST_F(DataService, TheTrainersOwnSplitsDeferWhatTheConsumerAsksAndTheWorkersBatchesComeDecoded) {
  const testing::Watchdog watchdog(60s, "deferral of the trainer's own splits");
  ChainSpec spec = chain();
  spec.parameters["flip"] = "0";  // the decode is the chain's last map: the one that may defer
  spec.parameters["distort"] = "0";
  auto deferred_in = [&](const Service& service, int local_threads, const std::shared_ptr<DeferPolicy>& policy) {
    ServiceOptions o = options();
    o.local_threads = local_threads;
    Seen seen;
    const std::size_t deferred = take_deferring(from_service(service.url(), spec, o), policy, seen);
    expect_each_once(seen, 2, kClasses * kPerClass);
    return deferred;
  };
  Service none(0);
  // A job that is not deterministic says so to its consumer: a feeder's split may then follow timing.
  EXPECT_FALSE(from_service(none.url(), spec, options()).options().deterministic);
  auto local = std::make_shared<EveryOtherSample>();
  const std::size_t deferred_locally = deferred_in(none, 1, local);
  EXPECT_EQ(deferred_locally, static_cast<std::size_t>((local->asked + 1) / 2 - local->declined_count));
  EXPECT_EQ(local->asked, 2 * kClasses * kPerClass) << "every sample was the trainer's own";
  EXPECT_GT(deferred_locally, 0u);

  Service one(1);
  auto remote = std::make_shared<EveryOtherSample>();
  EXPECT_EQ(deferred_in(one, 0, remote), 0u) << "a worker's batch came with samples left undecoded";
  EXPECT_EQ(remote->asked, 0) << "the policy was asked about a worker's samples";
}

// While a worker serves, the trainer's own splits leave every sample to its GPU decoder (local_gpu_first):
// the workers' batches come decoded, and the trainer's cores also receive them. Off, the consumer's policy
// decides.
TEST_F(DataService, WhileWorkersServeTheTrainersOwnSplitsDeferEverySampleTheConsumerTakes) {
  const testing::Watchdog watchdog(60s, "the trainer's own splits on its GPU");
  ChainSpec spec = chain();
  spec.parameters["flip"] = "0";
  spec.parameters["distort"] = "0";
  Service one(1);
  for (const bool gpu_first : {true, false}) {
    SCOPED_TRACE(gpu_first ? "local_gpu_first" : "the consumer's policy");
    ServiceOptions o = options();
    o.local_threads = 1;
    o.local_gpu_first = gpu_first;
    auto policy = std::make_shared<EveryOtherSample>();
    Seen seen;
    const std::size_t deferred = take_deferring(from_service(one.url(), spec, o), policy, seen);
    expect_each_once(seen, 2, kClasses * kPerClass);
    const int asked = policy->asked.load();  // the trainer's own samples: its policy hears each one
    ASSERT_GT(asked, 0) << "the trainer's cores made no split";
    const int expected =
        gpu_first ? asked - policy->declined_count : (asked + 1) / 2 - policy->declined_count;
    EXPECT_EQ(deferred, static_cast<std::size_t>(expected));
  }
}

// Each stream to a worker is a connection of its own; whatever their number, every sample arrives once and a
// worker's streams are one part of the report.
TEST_F(DataService, AnyNumberOfStreamsAWorkerDeliversEverySampleOnce) {
  const testing::Watchdog watchdog(60s, "streams per worker");
  Service service(2);
  for (const std::size_t streams : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(streams) + " stream(s) a worker");
    ServiceOptions o = options();
    o.streams_per_worker = streams;
    BatchIterator it = from_service(service.url(), chain(), o).begin();
    Seen seen;
    take(it, seen);
    expect_each_once(seen, 2, kClasses * kPerClass);
    std::size_t parts = 0;
    for (const SourcePart& part : seen.stats.source_parts) parts += part.elements > 0 ? 1 : 0;
    EXPECT_LE(parts, 2u) << "a worker's streams are reported as one part";
    EXPECT_GE(parts, 1u);
  }
}

TEST_F(DataService, RefusesAWrongTokenAndAnotherChainUnderTheJobsName) {
  const testing::Watchdog watchdog(60s, "refusals");
  Service service(1);
  ServiceOptions o = options();
  o.job = "shared";
  o.token = "right";
  BatchIterator it = from_service(service.url(), chain(), o).begin();
  ASSERT_TRUE(it.next());
  o.token = "wrong";
  try {
    (void)from_service(service.url(), chain(), o);
    FAIL() << "a wrong token was let in";
  } catch (const ServiceError& error) {
    EXPECT_EQ(error.kind(), ServiceError::Kind::unauthorized) << error.what();
  }
  o.token = "right";
  try {
    (void)from_service(service.url(), chain(/*seed=*/8), o);
    FAIL() << "another chain joined the job";
  } catch (const ServiceError& error) {
    EXPECT_EQ(error.kind(), ServiceError::Kind::refused);
    EXPECT_NE(std::string(error.what()).find("seed 8"), std::string::npos) << error.what();
  }
  // The worker went on serving its trainer meanwhile.
  Seen seen;
  take(it, seen);
  EXPECT_EQ(seen.batches, 17u);
}

TEST_F(DataService, AUserChainIsBuiltByNameAndAWorkerWithOtherDataRefusesIt) {
  const testing::Watchdog watchdog(60s, "user chains");
  Service service(0);
  // "photos" as the trainer and the first worker know it, and a worker whose "photos" read another folder.
  auto photos = [](std::filesystem::path data) {
    ChainRegistry chains;
    chains.add("photos", [data](const ChainParameters& p) {
      ChainParameters here = p;
      here["data"] = data.string();
      return standard_chain(here);
    });
    return chains;
  };
  const testing::TempDir other;
  const std::filesystem::path elsewhere = testing::make_jpeg_folder(other, 2, 5, 40, 56);
  service.add_worker(photos(folder_));
  service.add_worker(photos(elsewhere));
  service.wait_for_workers(2);
  ServiceOptions o = options();
  o.chains = photos(folder_);
  ChainSpec spec = chain();
  spec.name = "photos";
  Seen seen;
  BatchIterator it = from_service(service.url(), spec, o).begin();
  take(it, seen);
  expect_each_once(seen, 2, kClasses * kPerClass);
  EXPECT_EQ(service.workers[1]->counters().batches, 0u);
  EXPECT_GE(service.workers[1]->counters().refused, 1u);
}

TEST_F(DataService, ASleepingTrainerHoldsTheWorkersWhereTheyAre) {
  const testing::Watchdog watchdog(60s, "flow control");
  Service service(1);
  ServiceOptions o = options(8, 40);  // 40 epochs of 36: far more than any queue holds
  o.prefetch = 2;
  BatchIterator it = from_service(service.url(), chain(), o).begin();
  Seen seen;
  take(it, seen, 3);
  // The trainer sleeps; the worker fills what it may, then waits. How long filling takes depends on the
  // machine (a sanitizer build on a loaded one is slow), so wait until its count holds for half a second,
  // then see it hold for a whole one.
  WorkerCounters before = service.workers[0]->counters();
  for (const auto deadline = std::chrono::steady_clock::now() + 30s;
       std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(500ms);
    const WorkerCounters now = service.workers[0]->counters();
    if (now.batches == before.batches) break;
    before = now;
  }
  std::this_thread::sleep_for(1000ms);
  const WorkerCounters after = service.workers[0]->counters();
  EXPECT_EQ(after.batches, before.batches) << "the worker kept making batches nobody reads";
  // What it made beyond what the trainer took: its queues, the network's window and the trainer's buffers,
  // a few dozen small batches, not the job's 200.
  EXPECT_LT(after.batches, 3u + 60u);
  take(it, seen);
  EXPECT_EQ(seen.batches, 40u * 5u);
}

}  // namespace
}  // namespace conveyor::service
