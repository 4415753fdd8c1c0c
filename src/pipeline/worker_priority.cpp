#include "src/pipeline/worker_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace conveyor::detail {

void raise_this_threads_nice(int nice) noexcept {
  thread_local int last_asked = -1;  // nice values asked for are 1-19
  if (nice == last_asked) return;
  last_asked = nice;
  const auto thread = static_cast<id_t>(::gettid());
  errno = 0;  // getpriority may return -1 as a value: errno tells an error apart
  const int now = ::getpriority(PRIO_PROCESS, thread);
  if (errno == 0 && now >= nice) return;
  static_cast<void>(::setpriority(PRIO_PROCESS, thread, nice));
}

}  // namespace conveyor::detail
