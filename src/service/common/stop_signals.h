// How a service process is stopped: SIGINT and SIGTERM, taken by the one thread that waits for them instead
// of interrupting whichever thread they land on.
#pragma once

#include <signal.h>

namespace conveyor::service::detail {

// Blocks SIGINT and SIGTERM in the calling thread. Make it before the service starts any thread: the
// threads inherit the mask, so the signals stay pending until wait() takes one. The mask is not restored:
// the process is on its way out once wait() returns.
class StopSignals {
 public:
  StopSignals();
  // Until SIGINT or SIGTERM arrives.
  void wait() const;

 private:
  sigset_t set_;
};

}  // namespace conveyor::service::detail
