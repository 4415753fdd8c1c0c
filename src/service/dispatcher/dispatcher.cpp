// Dispatcher and run_dispatcher (conveyor/service/dispatcher.h).
#include "conveyor/service/dispatcher.h"

#include "src/service/common/stop_signals.h"
#include "src/service/dispatcher/dispatcher_core.h"
#include "src/service/transport/links.h"

namespace conveyor::service {

struct Dispatcher::Parts {
  explicit Parts(const DispatcherOptions& options)
      : core(options.work_dir, options.worker_timeout),
        server(detail::serve_dispatcher(core, options.listen_host + ":" + std::to_string(options.port),
                                        options.tls)) {}
  detail::DispatcherCore core;
  std::unique_ptr<detail::Server> server;  // after the core: it stops answering before the core goes
};

Dispatcher::Dispatcher(DispatcherOptions options) : parts_(std::make_unique<Parts>(options)) {}
Dispatcher::~Dispatcher() = default;
int Dispatcher::port() const noexcept { return parts_->server->port(); }
std::size_t Dispatcher::replayed() const noexcept { return parts_->core.replayed(); }

void run_dispatcher(const DispatcherOptions& options, const std::function<void(const Dispatcher&)>& started) {
  const detail::StopSignals stop;  // before the dispatcher starts its threads
  Dispatcher dispatcher(options);
  if (started) started(dispatcher);
  stop.wait();
}

}  // namespace conveyor::service
