// conveyor-dispatcher --port P [--work-dir DIR] [--host H] [--tls DIR]: the data service's dispatcher, until
// SIGINT or SIGTERM. With --work-dir its journal lives there and a restart carries on where it stopped.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "conveyor/service/dispatcher.h"

int main(int argc, char** argv) {
  conveyor::service::DispatcherOptions options;
  options.port = 5000;
  std::string tls;
  long long worker_timeout_ms = options.worker_timeout.count();
  CLI::App app("conveyor-dispatcher: the data service's dispatcher (jobs, splits, workers)");
  app.add_option("--port", options.port, "port to listen on (0: a free one, printed)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--host", options.listen_host, "address to listen on")->capture_default_str();
  app.add_option("--work-dir", options.work_dir, "keep the journal here (a restart carries on)");
  app.add_option("--tls", tls, "TLS from DIR/ca.pem, DIR/cert.pem and DIR/key.pem");
  app.add_option("--worker-timeout-ms", worker_timeout_ms, "a worker silent this long is not handed out")
      ->capture_default_str()
      ->check(CLI::Range(100LL, 3600000LL));
  CLI11_PARSE(app, argc, argv);
  try {
    options.worker_timeout = std::chrono::milliseconds(worker_timeout_ms);
    if (!tls.empty()) options.tls = conveyor::service::Tls::from_folder(tls);
    conveyor::service::run_dispatcher(options, [&](const conveyor::service::Dispatcher& dispatcher) {
      std::printf("conveyor-dispatcher: listening on %s:%d (%zu journal records replayed)\n",
                  options.listen_host.c_str(), dispatcher.port(), dispatcher.replayed());
      std::fflush(stdout);
    });
  } catch (const std::exception& error) {
    std::fprintf(stderr, "conveyor-dispatcher: %s\n", error.what());
    return 1;
  }
  return 0;
}
