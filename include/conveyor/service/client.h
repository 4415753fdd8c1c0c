// A trainer's side of the data service: batches of a chain made by the service's workers (and, when asked, by
// the trainer's own cores), handed over as a BatchedDataset like any other.
//
//   namespace svc = conveyor::service;
//   conveyor::BatchedDataset train = svc::from_service(
//       "grpc://dispatcher-host:5000",
//       {.parameters = {{"data", "/data/imagenet/train"}, {"size", "224"}}, .seed = 42},
//       {.batch_size = 256, .epochs = 90, .ranks = conveyor::ranks_from_environment(), .local_threads = 4});
//   for (conveyor::DeviceBatch& batch : feeder.feed(train)) trainer.step(batch);
//
// What it promises:
// - Every sample of every epoch exactly once per rank's share, even when a worker is killed mid-split: a
// split
//   is a pure function of (job, rank, index), so the rest of a lost worker's split (from its first batch not
//   received) is handed to another worker and made again, bit for bit; nothing received is thrown away and
//   nothing is made twice into the trainer's hands.
// - Every rank of a data-parallel job (ServiceOptions::ranks) shares the job and gets its own share of each
//   epoch, as many batches as every other rank.
// - state() and begin(state) continue a job where a trainer stopped, as for a local chain.
// - Local first: with local_threads the trainer's own cores take splits as fast as they can, the workers the
//   rest. With no worker reachable (or no dispatcher), it trains on local cores and says so in
//   PipelineStats::source_note.
// - Memory bounded on both ends: the trainer reads from a worker only while its queue has room, and a worker
//   waits on the network (gRPC's flow control) with a bounded queue and pipeline.
// - deterministic: batches in the order a local run gives them, bit for bit (when a rank's epoch is a whole
//   number of batches; batches never span epochs here). It costs the merge: a slow worker holds up the
//   others' batches (head-of-line), where the default takes whichever batch is ready first.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "conveyor/dataset.h"
#include "conveyor/ranks.h"
#include "conveyor/service/chain.h"
#include "conveyor/service/endpoint.h"

namespace conveyor::service {

struct ServiceOptions {
  std::size_t batch_size = 256;
  std::uint64_t epochs = 1;  // 0: forever
  bool shuffle = true;       // the whole-epoch shuffle, seeded from the chain's seed
  bool drop_remainder = false;
  // This trainer's rank and the job's world size: each rank is one consumer of the job.
  Ranks ranks{};
  ShardRemainder remainder = ShardRemainder::pad;  // how the ranks' shares are evened (pad or drop)
  std::size_t split_batches = 0;                   // batches a split; 0: about 2,048 samples
  bool deterministic = false;
  // The trainer's own cores that make splits too (0: none, unless no worker is reachable and local_fallback).
  int local_threads = 0;
  std::vector<int> local_cpus;  // where they run (PipelineOptions::cpus)
  bool local_fallback = true;
  // While workers serve, the trainer's own splits leave every sample its GPU decoder takes to it (a
  // DeviceFeeder decoding on the GPU), since the workers' batches come decoded and its cores also receive
  // them; false, or without workers, or deterministic: the feeder's split decides, as in a local pipeline.
  bool local_gpu_first = true;
  std::size_t prefetch = 4;  // batches kept ready ahead of the consumer
  std::string job;           // the job's name; empty: its fingerprint (every trainer of one chain shares it)
  std::string token;         // the job's token: the first trainer sets it, the others must present it
  ChainRegistry chains;      // to build the chain here (local threads, fallback, describing the data)
  Tls tls;
  std::chrono::milliseconds timeout{5000};  // control calls; a worker silent this long with work is lost
  // Streams this trainer opens to each worker, each on a connection of its own: one connection's receiving
  // (gRPC reads and parses it on one thread, into fresh memory) carried about 10k images of 224x224 a second
  // (1.5 GB/s) where a 12-core worker made 18k: 0.57-0.58x the local pipeline, against 0.894x with two
  // streams (issue 40, bench/results/2026-11-29-h200-service-transport).
  std::size_t streams_per_worker = 2;
  std::size_t splits_per_worker = 2;  // splits each stream to a worker has in hand
  // glibc's malloc keeps the memory gRPC reads batches into, rather than giving it back to the kernel and
  // faulting fresh pages in for every read: fixed thresholds (mmap 32 MB, trim 1 GB), set once for the whole
  // process when the first trainer starts, unless its environment sets them (GLIBC_TUNABLES): the user's
  // choice stands. The cost: freed memory up to 1 GB a heap stays with the process.
  // PipelineStats::source_note says what the heap does.
  bool keep_received_memory = true;
  // A worker on this trainer's host lends it batches through shared memory (a memfd the trainer maps
  // read-only) instead of sending their bytes through the socket, which cost the worker about a sixth of its
  // CPU per image of 224 x 224 over loopback (issue 40). Workers elsewhere, or one that cannot be mapped,
  // send as before; PipelineStats::source_parts' shared_bytes shows which way batches came.
  bool shared_memory = true;
};

// The batches of `chain`, made by the service at `url` ("grpc://HOST:PORT", the dispatcher). Joins the job
// (creating it if it is the first trainer) and learns the chain's shape, from this process when it can build
// the chain, else from a worker. Throws ServiceError: refused (another chain under the job's name, another
// version), unauthorized (token), unavailable (neither the dispatcher nor this process can make the chain).
BatchedDataset from_service(const std::string& url, const ChainSpec& chain,
                            const ServiceOptions& options = {});

}  // namespace conveyor::service
