// Runs a program as a child process for tests of tools and of several processes working together
// (posix_spawn, its stdout and stderr captured through pipes). The destructor kills a child that is still
// running and reaps it, so a failing test never leaves one behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace conveyor::testing {

struct ProcessResult {
  int exit_code = -1;      // the exit status, or -signal when a signal ended it
  bool timed_out = false;  // killed after the limit
  std::string out, err;
};

class ChildProcess {
 public:
  // Starts `argv` (argv[0] is the program's path) with the parent's environment plus `environment`
  // ("NAME=value" entries, which replace variables of the same name).
  explicit ChildProcess(const std::vector<std::string>& argv,
                        const std::vector<std::string>& environment = {});
  // The same with stdout and stderr going to `log` (created or truncated) instead of pipes: for a server that
  // runs while the test does (a pipe nobody reads would fill and stop it). wait() then returns no output.
  ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
               const std::filesystem::path& log);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Collects the output until the child exits; kills it (SIGKILL) once `limit` has passed.
  ProcessResult wait(std::chrono::milliseconds limit);
  // Sends `signal` to the child (while it has not been waited for).
  void signal(int signal);
  pid_t pid() const noexcept { return pid_; }

 private:
  void spawn(const std::vector<std::string>& argv, const std::vector<std::string>& environment, int out,
             int err);
  pid_t pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  bool reaped_ = false;
};

// ChildProcess(argv, environment).wait(limit).
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                          std::chrono::milliseconds limit);

// A program a test runs: $VARIABLE when it is set and not empty (the suite copied to another machine, e.g.
// the GPU machine by scripts/gpu_test_run.sh, where the build's paths do not exist), else `built`, where the
// build put it.
std::string program_path(const char* variable, const char* built);

}  // namespace conveyor::testing
