#include "src/service/common/stop_signals.h"

#include <pthread.h>

namespace conveyor::service::detail {

StopSignals::StopSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
}

void StopSignals::wait() const {
  int signal = 0;
  sigwait(&set_, &signal);
}

}  // namespace conveyor::service::detail
