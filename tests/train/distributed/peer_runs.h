// Running data_parallel_peer (and the examples) as the ranks of a job, for the data-parallel tests: under
// scripts/launch.sh (mpirun on this machine), under mpirun directly, across the two hosts of
// tests/support/two_hosts.sh, or alone; and reading what the ranks printed and saved.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "support/subprocess.h"

// Skips a test that runs its ranks with Open MPI's launcher where there is none (the GPU machine).
#define CONVEYOR_REQUIRE_MPIRUN()                     \
  if (::conveyor::testing::on_path("mpirun").empty()) \
  GTEST_SKIP() << "no mpirun on the PATH (Open MPI's launcher)"

namespace conveyor::testing {

// A finished run and how long it took.
struct TimedRun {
  ProcessResult result;
  double seconds = 0;
};

// The peer program, scripts/launch.sh and tests/support/two_hosts.sh (each may be moved by a variable of
// its name, as program_path() says).
std::string data_parallel_peer();
std::string launch_script();
std::string two_hosts_script();
// The full path of `program` found on the PATH; empty when it is not there.
std::string on_path(const std::string& program);

// Under AddressSanitizer, what a program that runs MPI needs so that LeakSanitizer tells Open MPI's own
// leaks (tests/lsan.supp) from ours: ASAN_OPTIONS and LSAN_OPTIONS; nothing in other builds.
std::vector<std::string> mpi_sanitizer_environment();

// `argv` run with `environment` added, killed after `limit`.
TimedRun run_timed(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                   std::chrono::seconds limit);
// scripts/launch.sh N COMMAND..., with mpi_sanitizer_environment() and `environment` added.
TimedRun launch(int ranks, const std::vector<std::string>& command, std::chrono::seconds limit,
                const std::vector<std::string>& environment = {});
// "mpirun [--allow-run-as-root] -np N --bind-to none": the start of an mpirun command line on this host.
std::vector<std::string> mpirun(int ranks);
// The shell command line that runs `command` (words without spaces) as two ranks, one on each host of
// two_hosts.sh, through mpirun on the first (Open MPI's rsh agent being on_host.sh), over the hosts' own
// network only; run it with two_hosts().
std::string mpirun_across_two_hosts(const std::vector<std::string>& command);
// two_hosts.sh sh -c LINE. Its exit status 77 means the hosts could not be made (no root): skip.
TimedRun two_hosts(const std::string& line, std::chrono::seconds limit);

// The lines of `text` that start with `prefix`, in order.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix);
// A file's bytes; empty when it cannot be read.
std::string file_bytes(const std::filesystem::path& path);
// The bytes of the weights and momentum a trainer saved as DIR/NAME.json (its two safetensors files).
std::string checkpoint_bytes(const std::filesystem::path& dir, const std::string& name);
// The largest difference between the float32 tensors of two safetensors files of the same tensors, relative
// to 1 + |expected|; +inf when their names or shapes differ.
double largest_weight_difference(const std::filesystem::path& got, const std::filesystem::path& expected);

}  // namespace conveyor::testing
