// conveyor-worker --dispatcher HOST:P [--threads N] [--port Q] [--host H] [--advertise H] [--cpus LIST]
// [--tls DIR] [--shared-memory-mb M]: a data service worker serving the standard chain, until SIGINT or
// SIGTERM.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "conveyor/service/worker.h"

int main(int argc, char** argv) {
  conveyor::service::WorkerOptions options;
  std::string tls;
  long long heartbeat_ms = options.heartbeat.count();
  CLI::App app("conveyor-worker: a data service worker (makes the splits trainers ask for)");
  app.add_option("--dispatcher", options.dispatcher, "the dispatcher, grpc://HOST:PORT or HOST:PORT")
      ->required();
  app.add_option("--threads", options.threads, "threads of each split's pipeline (0: one per CPU)")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  app.add_option("--port", options.port, "port of the data plane (0: a free one, told to the dispatcher)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", options.listen_host, "address to listen on")->capture_default_str();
  app.add_option("--advertise", options.advertise_host,
                 "host trainers reach this worker at (default: --host, or the host name for 0.0.0.0)");
  app.add_option("--cpus", options.cpus, "CPUs the pipelines run on, e.g. 4,5,6,7")->delimiter(',');
  app.add_option("--nice", options.worker_nice, "nice value of the pipelines' threads")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  app.add_option("--tls", tls, "TLS from DIR/ca.pem, DIR/cert.pem and DIR/key.pem");
  app.add_option("--heartbeat-ms", heartbeat_ms, "beat to the dispatcher this often")
      ->capture_default_str()
      ->check(CLI::Range(50LL, 60000LL));
  std::size_t shared_memory_mb = options.shared_memory_bytes >> 20;
  app.add_option("--shared-memory-mb", shared_memory_mb,
                 "each stream of a trainer on this host gets its batches through shared memory of this size "
                 "(address space; pages are used as batches need them); 0: through the socket")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
  CLI11_PARSE(app, argc, argv);
  try {
    options.heartbeat = std::chrono::milliseconds(heartbeat_ms);
    options.shared_memory_bytes = shared_memory_mb << 20;
    if (!tls.empty()) options.tls = conveyor::service::Tls::from_folder(tls);
    conveyor::service::run_worker(options, [&](const conveyor::service::Worker& worker) {
      std::printf("conveyor-worker: serving on %s for %s\n", worker.address().c_str(),
                  options.dispatcher.c_str());
      std::fflush(stdout);
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "conveyor-worker: %s\n", error.what());
    return 1;
  }
  return 0;
}
