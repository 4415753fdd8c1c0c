// The data service's programs as processes, for tests: start them (on this host, or on one of two_hosts.sh's
// hosts), find the port a dispatcher listens on, wait for workers, and check a trainer's sample log: every
// (epoch, index) exactly once, with one checksum.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace conveyor::testing {

class ServiceProcesses {
 public:
  // `host`: empty for this host (127.0.0.1), else an address of two_hosts.sh's (run there through
  // on_host.sh).
  explicit ServiceProcesses(const TempDir& dir) : dir_(dir) {}

  // conveyor-dispatcher on `host` (port 0: a free one); returns its port.
  int start_dispatcher(const std::string& host, int port, const std::filesystem::path& work_dir);
  void start_worker(const std::string& host, const std::string& dispatcher);
  // Runs service_trainer on `host` with these extra arguments; its stdout and stderr.
  ProcessResult run_trainer(const std::string& host, const std::string& dispatcher,
                            const std::vector<std::string>& arguments, std::chrono::milliseconds limit);
  // Starts one, returns it; wait() it later.
  ChildProcess& start_trainer(const std::string& host, const std::string& dispatcher,
                              const std::vector<std::string>& arguments, const std::string& name);
  // Until `n` workers are alive at the dispatcher (asked on `host`), or false after `limit`.
  bool wait_for_workers(const std::string& host, const std::string& dispatcher, int n,
                        std::chrono::milliseconds limit);

  ChildProcess& dispatcher() { return *dispatcher_; }
  std::string dispatcher_log() const { return log(dispatcher_name_); }
  ChildProcess& worker(std::size_t i) { return *workers_.at(i); }
  std::string log(const std::string& name) const;  // a process's output so far
  // SIGTERM to every server; the exit codes, as "name: code" lines for those that did not exit with 0.
  std::string stop_all();

  std::filesystem::path data;  // the JPEG folder every process reads

 private:
  ChildProcess& start(const std::string& host, std::vector<std::string> argv, const std::string& name);
  const TempDir& dir_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;  // every one started, until the fixture ends
  ChildProcess* dispatcher_ = nullptr;
  std::string dispatcher_name_;
  std::vector<ChildProcess*> workers_;
  std::vector<std::pair<std::string, ChildProcess*>> servers_;  // stopped by stop_all
  int trainer_count_ = 0;
  int worker_count_ = 0;
};

// (epoch, index) -> (times, checksums seen) of a service_trainer log.
struct SampleLog {
  std::map<std::pair<std::uint64_t, std::uint64_t>, int> times;
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> checksum;
  std::size_t lines = 0;
  std::size_t conflicts = 0;  // a sample seen with two different checksums
};
SampleLog read_sample_log(const std::filesystem::path& log);
// "" when every (epoch, index) of `epochs` epochs of `samples` is there exactly once; else what is wrong.
std::string exactly_once(const SampleLog& log, std::uint64_t epochs, std::uint64_t samples);
std::size_t lines_in(const std::filesystem::path& file);

}  // namespace conveyor::testing
