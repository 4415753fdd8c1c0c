#include "process_fixture.h"

#include <signal.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace conveyor::testing {
namespace {

std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChildProcess& ServiceProcesses::start(const std::string& host, std::vector<std::string> argv,
                                      const std::string& name) {
  if (!host.empty() && host != "127.0.0.1") {
    // On one of two_hosts.sh's hosts: on_host.sh joins the words and runs them with sh, whose `exec` makes
    // the program itself the child (a SIGKILL then reaches it, not a shell).
    std::string line = "exec";
    for (const std::string& word : argv) line += " '" + word + "'";
    argv = {std::getenv("CONVEYOR_ON_HOST"), host, line};
  }
  processes_.push_back(
      std::make_unique<ChildProcess>(argv, std::vector<std::string>{}, dir_ / (name + ".log")));
  return *processes_.back();
}

int ServiceProcesses::start_dispatcher(const std::string& host, int port,
                                       const std::filesystem::path& work_dir) {
  const std::string name = "dispatcher" + std::to_string(processes_.size());
  dispatcher_name_ = name;
  dispatcher_ = &start(host,
                       {CONVEYOR_DISPATCHER_PROGRAM, "--host", host, "--port", std::to_string(port),
                        "--work-dir", work_dir.string(), "--worker-timeout-ms", "1500"},
                       name);
  servers_.emplace_back(name, dispatcher_);
  const std::regex listening("listening on [^:]+:([0-9]+)");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    std::smatch match;
    const std::string text = log(name);
    if (std::regex_search(text, match, listening)) return std::stoi(match[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

void ServiceProcesses::start_worker(const std::string& host, const std::string& dispatcher) {
  const std::string name = "worker" + std::to_string(worker_count_++);
  workers_.push_back(&start(host,
                            {CONVEYOR_WORKER_PROGRAM, "--dispatcher", dispatcher, "--host", host, "--threads",
                             "1", "--heartbeat-ms", "200"},
                            name));
  servers_.emplace_back(name, workers_.back());
}

ChildProcess& ServiceProcesses::start_trainer(const std::string& host, const std::string& dispatcher,
                                              const std::vector<std::string>& arguments,
                                              const std::string& name) {
  std::vector<std::string> argv{CONVEYOR_SERVICE_TRAINER, "--service", dispatcher, "--data", data.string()};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  return start(host, argv, name);
}

ProcessResult ServiceProcesses::run_trainer(const std::string& host, const std::string& dispatcher,
                                            const std::vector<std::string>& arguments,
                                            std::chrono::milliseconds limit) {
  const std::string name = "trainer" + std::to_string(trainer_count_++);
  ProcessResult result = start_trainer(host, dispatcher, arguments, name).wait(limit);
  result.out = log(name);
  return result;
}

bool ServiceProcesses::wait_for_workers(const std::string& host, const std::string& dispatcher, int n,
                                        std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    std::vector<std::string> argv{CONVEYOR_STATUS_PROGRAM, "grpc://" + dispatcher};
    if (!host.empty() && host != "127.0.0.1")
      argv = {std::getenv("CONVEYOR_ON_HOST"), host, "exec '" + argv[0] + "' '" + argv[1] + "'"};
    const ProcessResult status = run_process(argv, {}, std::chrono::seconds(20));
    int alive = 0;
    for (std::size_t at = status.out.find("  alive  "); at != std::string::npos;
         at = status.out.find("  alive  ", at + 1))
      ++alive;
    if (alive >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string ServiceProcesses::log(const std::string& name) const { return read_all(dir_ / (name + ".log")); }

std::string ServiceProcesses::stop_all() {
  std::string problems;
  for (auto& [name, process] : servers_) process->signal(SIGTERM);
  for (auto& [name, process] : servers_) {
    const ProcessResult result = process->wait(std::chrono::seconds(20));
    if (result.exit_code != 0 && result.exit_code != -SIGKILL)
      problems += name + ": exit " + std::to_string(result.exit_code) + "\n" + log(name) + "\n";
  }
  servers_.clear();
  return problems;
}

SampleLog read_sample_log(const std::filesystem::path& file) {
  SampleLog out;
  std::ifstream in(file);
  unsigned long long epoch = 0, index = 0;
  long long label = 0;
  std::string checksum;
  while (in >> epoch >> index >> label >> checksum) {
    ++out.lines;
    const auto key = std::make_pair(static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index));
    ++out.times[key];
    auto [it, fresh] = out.checksum.emplace(key, checksum);
    if (!fresh && it->second != checksum) ++out.conflicts;
  }
  return out;
}

std::string exactly_once(const SampleLog& log, std::uint64_t epochs, std::uint64_t samples) {
  std::string problems;
  for (const auto& [key, times] : log.times)
    if (times != 1)
      problems += "epoch " + std::to_string(key.first) + " index " + std::to_string(key.second) + ": " +
                  std::to_string(times) + " times\n";
  if (log.times.size() != epochs * samples)
    problems += std::to_string(log.times.size()) + " distinct samples, expected " +
                std::to_string(epochs * samples) + "\n";
  if (log.conflicts > 0) problems += std::to_string(log.conflicts) + " samples with two checksums\n";
  return problems;
}

std::size_t lines_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace conveyor::testing
