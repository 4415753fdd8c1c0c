// What a data service is made of right now, list_devices-style: each worker (where it runs, on what CPUs and
// library versions, what it has done, whether it is alive) and each job (its chain, its consumers and what
// each last reported: images, the share its own cores made, time spent waiting for batches).
// conveyor-service-status prints it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/service/endpoint.h"
#include "conveyor/service/worker.h"
#include "conveyor/stats.h"

namespace conveyor::service {

struct WorkerStatus {
  std::string address, host, cpu, version;
  unsigned cores = 0, threads = 0;
  std::vector<std::string> libraries, chains;
  bool alive = false;
  double seconds_since_heartbeat = 0;
  WorkerCounters counters;
  std::uint64_t resident_bytes = 0;
};

struct ConsumerStatus {
  std::uint64_t consumer = 0, generation = 0, next_split = 0;
  std::uint64_t batches = 0, elements = 0;
  double wait_seconds = 0;
  std::vector<SourcePart> parts;
  std::string note;
};

struct JobStatus {
  std::string name, fingerprint, chain;
  std::uint64_t batch_size = 0, consumers = 0, epochs = 0, samples = 0;
  std::vector<ConsumerStatus> consumer_status;
};

struct ServiceStatus {
  std::string version;
  double uptime_seconds = 0;
  std::vector<WorkerStatus> workers;
  std::vector<JobStatus> jobs;
};

// Asks the dispatcher at `url`. Throws ServiceError.
ServiceStatus service_status(const std::string& url, const Tls& tls = {});
// A few lines per worker and job.
std::string format_status(const ServiceStatus& status);

}  // namespace conveyor::service
