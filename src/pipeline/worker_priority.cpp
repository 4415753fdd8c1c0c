#include "src/pipeline/worker_priority.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace conveyor::detail {
namespace {

// This thread's nice value (getpriority can return -1 as a value: errno tells an error apart).
int nice_of_this_thread() {
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()));
  return errno == 0 ? nice : 0;
}

// Best effort: a thread that may not take the value (lowering it needs privilege) keeps its own.
void set_nice_of_this_thread(int nice) {
  static_cast<void>(::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice));
}

}  // namespace

WorkerPriority::WorkerPriority(tbb::task_arena& arena, int nice)
    : tbb::task_scheduler_observer(arena), nice_(nice), base_nice_(nice_of_this_thread()) {
  arena.initialize();
  observe(true);
}

WorkerPriority::~WorkerPriority() { observe(false); }  // no callback may reach a half-destroyed observer

void WorkerPriority::on_scheduler_entry(bool) {
  if (nice_of_this_thread() < nice_) set_nice_of_this_thread(nice_);
}

void WorkerPriority::on_scheduler_exit(bool) {
  if (nice_of_this_thread() != base_nice_) set_nice_of_this_thread(base_nice_);
}

}  // namespace conveyor::detail
