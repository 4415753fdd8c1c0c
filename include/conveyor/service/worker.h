// A data service worker: it registers with the dispatcher, builds the chains trainers ask for from its
// ChainRegistry, and streams the splits they request as batches. conveyor-worker is this with the standard
// chain; a team with chains of its own writes a worker program of a few lines:
//
//   int main() {
//     conveyor::service::WorkerOptions options;
//     options.dispatcher = "grpc://dispatcher-host:5000";
//     options.chains.add("my_chain", build_my_chain);
//     conveyor::service::run_worker(options);  // until SIGINT or SIGTERM
//   }
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/service/chain.h"
#include "conveyor/service/endpoint.h"

namespace conveyor::service {

struct WorkerOptions {
  std::string dispatcher;               // grpc://HOST:PORT (required)
  std::string listen_host = "0.0.0.0";  // where the data plane listens
  int port = 0;                         // 0: a free port, told to the dispatcher
  // The host trainers reach this worker at; empty: listen_host, or this machine's host name when that is
  // 0.0.0.0.
  std::string advertise_host;
  int threads = 0;        // each split's pipeline (0: one per CPU it may use)
  std::vector<int> cpus;  // the CPUs its pipelines run on (empty: any); see PipelineOptions::cpus
  int worker_nice = 0;    // its pipelines' nice value (a worker host has nothing else to yield to)
  ChainRegistry chains;   // the standard chain, and any added
  Tls tls;
  std::chrono::milliseconds heartbeat{1000};  // the dispatcher counts a worker lost after a few missed
  std::size_t stream_depth = 2;  // batches queued per trainer beyond the one on the wire (flow control)
  // Each trainer's stream from this host gets its batches through a region of shared memory this large
  // (address space; pages are used as batches need them), not through the socket: see docs/service.md.
  // 0: every batch goes through the socket.
  std::size_t shared_memory_bytes = std::size_t{2} << 30;
};

// What a worker has done, for its own figures and the dispatcher's status.
struct WorkerCounters {
  std::uint64_t splits = 0, batches = 0, elements = 0, bytes_sent = 0, refused = 0;
  std::uint64_t bytes_lent =
      0;  // batches' bytes trainers read from shared memory instead (not in bytes_sent)
  double busy_seconds = 0;
  std::size_t streams = 0;
};

class Worker {
 public:
  // Listens and starts registering with the dispatcher (in the background: a worker started before its
  // dispatcher registers once the dispatcher answers). Throws ServiceError when it cannot listen.
  explicit Worker(WorkerOptions options);
  // Stops: open streams are cancelled, their pipelines stopped and joined.
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  int port() const noexcept;
  // HOST:PORT as told to the dispatcher.
  const std::string& address() const noexcept;
  // Whether the dispatcher has this worker registered (as far as the last heartbeat knows).
  bool registered() const noexcept;
  WorkerCounters counters() const;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

// Runs a worker until the process receives SIGINT or SIGTERM (blocked in the calling thread and the threads
// it starts, and waited for), then stops it. `started`, when given, is called once the worker listens
// (conveyor-worker prints its address there). Throws what Worker's constructor throws.
void run_worker(const WorkerOptions& options, const std::function<void(const Worker&)>& started = nullptr);

}  // namespace conveyor::service
