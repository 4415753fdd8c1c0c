// conveyor-service-status grpc://HOST:PORT [--tls DIR]: what the data service at that dispatcher is made of:
// its workers (host, CPUs, versions, what each has done) and jobs (their consumers' figures).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "conveyor/service/status.h"

int main(int argc, char** argv) {
  std::string url, tls;
  CLI::App app("conveyor-service-status: the data service's workers and jobs, as its dispatcher knows them");
  app.add_option("dispatcher", url, "grpc://HOST:PORT")->required();
  app.add_option("--tls", tls, "TLS from DIR/ca.pem, DIR/cert.pem and DIR/key.pem");
  CLI11_PARSE(app, argc, argv);
  try {
    const conveyor::service::Tls files =
        tls.empty() ? conveyor::service::Tls{} : conveyor::service::Tls::from_folder(tls);
    std::printf("%s",
                conveyor::service::format_status(conveyor::service::service_status(url, files)).c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "conveyor-service-status: %s\n", error.what());
    return 1;
  }
  return 0;
}
