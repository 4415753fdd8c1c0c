#include "peer_runs.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

#include "src/train/safetensors.h"

namespace conveyor::testing {

std::string data_parallel_peer() {
  return program_path("CONVEYOR_DATA_PARALLEL_PEER", CONVEYOR_DATA_PARALLEL_PEER);
}
std::string launch_script() { return program_path("CONVEYOR_LAUNCH", CONVEYOR_LAUNCH); }
std::string two_hosts_script() { return program_path("CONVEYOR_TWO_HOSTS", CONVEYOR_TWO_HOSTS); }

std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path != nullptr ? path : "");
  for (std::string folder; std::getline(folders, folder, ':');) {
    const std::string candidate = folder + "/" + program;
    if (!folder.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// GCC says it builds under AddressSanitizer with __SANITIZE_ADDRESS__; clang 14, only through __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define CONVEYOR_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CONVEYOR_UNDER_ASAN 1
#endif
#endif

std::vector<std::string> mpi_sanitizer_environment() {
#if defined(CONVEYOR_UNDER_ASAN)
  return {"ASAN_OPTIONS=fast_unwind_on_malloc=0", std::string("LSAN_OPTIONS=suppressions=") + CONVEYOR_LSAN_SUPPRESSIONS};
#else
  return {};
#endif
}

TimedRun run_timed(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                   std::chrono::seconds limit) {
  const auto start = std::chrono::steady_clock::now();
  TimedRun run{run_process(argv, environment, limit)};
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

TimedRun launch(int ranks, const std::vector<std::string>& command, std::chrono::seconds limit,
                const std::vector<std::string>& environment) {
  std::vector<std::string> argv{launch_script(), std::to_string(ranks)};
  argv.insert(argv.end(), command.begin(), command.end());
  std::vector<std::string> all = mpi_sanitizer_environment();
  all.insert(all.end(), environment.begin(), environment.end());
  return run_timed(argv, all, limit);
}

std::vector<std::string> mpirun(int ranks) {
  std::vector<std::string> argv{on_path("mpirun")};
  if (::geteuid() == 0) argv.push_back("--allow-run-as-root");
  argv.insert(argv.end(), {"-np", std::to_string(ranks), "--bind-to", "none", "--oversubscribe"});
  return argv;
}

std::string mpirun_across_two_hosts(const std::vector<std::string>& command) {
  // One slot per host; the daemon on the second host is started by on_host.sh, and both Open MPI's own
  // messages and the ranks' traffic stay on the hosts' network (10.77.0.0/24).
  std::string line = "\"$CONVEYOR_ON_HOST\" \"$CONVEYOR_HOST_A\" mpirun" +
                     std::string(::geteuid() == 0 ? " --allow-run-as-root" : "") +
                     " --host \"$CONVEYOR_HOST_A,$CONVEYOR_HOST_B\" -np 2 --bind-to none"
                     " --mca plm_rsh_agent \"$CONVEYOR_ON_HOST\" --mca btl tcp,self"
                     " --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24";
  for (const std::string& word : command) line += " " + word;
  return line;
}

TimedRun two_hosts(const std::string& line, std::chrono::seconds limit) {
  return run_timed({two_hosts_script(), "sh", "-c", line}, {}, limit);
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string checkpoint_bytes(const std::filesystem::path& dir, const std::string& name) {
  return file_bytes(dir / (name + ".step-000000000000.safetensors")) +
         file_bytes(dir / (name + ".step-000000000000.optimizer.safetensors"));
}

double largest_weight_difference(const std::filesystem::path& got, const std::filesystem::path& expected) {
  const auto a = train::SafetensorsFile::read(got);
  const auto b = train::SafetensorsFile::read(expected);
  constexpr double kDifferent = std::numeric_limits<double>::infinity();
  if (a.tensors().size() != b.tensors().size()) return kDifferent;
  double worst = 0;
  for (const auto& [name, tensor] : b.tensors()) {
    if (!a.contains(name)) return kDifferent;
    const auto& other = a.at(name);
    if (tensor.dtype != "F32" || other.dtype != "F32" || tensor.shape != other.shape) return kDifferent;
    const std::size_t count = tensor.bytes.size() / sizeof(float);
    for (std::size_t i = 0; i < count; ++i) {
      float x = 0, y = 0;
      std::memcpy(&x, other.bytes.data() + i * sizeof(float), sizeof x);
      std::memcpy(&y, tensor.bytes.data() + i * sizeof(float), sizeof y);
      worst = std::max(worst, std::abs(static_cast<double>(x) - y) / (1 + std::abs(static_cast<double>(y))));
    }
  }
  return worst;
}

}  // namespace conveyor::testing
