// The data service's dispatcher: it knows the jobs (each a chain, its fingerprint and token, and how its
// epochs are cut), hands each trainer the next split of its share, and knows which workers are alive. It
// keeps its state in a journal (work_dir), so that a restarted dispatcher carries on where it stopped;
// trainers and workers go on meanwhile and reconnect. conveyor-dispatcher is this as a program.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "conveyor/service/endpoint.h"

namespace conveyor::service {

struct DispatcherOptions {
  std::string listen_host = "0.0.0.0";
  int port = 0;  // 0: a free one (see Dispatcher::port)
  // Where the journal lives; empty: nothing is kept (a restart forgets every job).
  std::filesystem::path work_dir;
  Tls tls;
  // A worker that has not beaten for this long is not handed to trainers any more.
  std::chrono::milliseconds worker_timeout{4000};
};

class Dispatcher {
 public:
  // Replays the journal, then listens. Throws ServiceError when it cannot listen, IoError when the journal
  // cannot be read or written.
  explicit Dispatcher(DispatcherOptions options);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  int port() const noexcept;
  // Records replayed from the journal at start (0 without a work_dir or on a first start).
  std::size_t replayed() const noexcept;

 private:
  struct Parts;
  std::unique_ptr<Parts> parts_;
};

// Runs a dispatcher until the process receives SIGINT or SIGTERM (see run_worker); `started`, when given, is
// called once it listens (conveyor-dispatcher prints its port there).
void run_dispatcher(const DispatcherOptions& options,
                    const std::function<void(const Dispatcher&)>& started = nullptr);

}  // namespace conveyor::service
