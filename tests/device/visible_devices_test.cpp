// CUDA_VISIBLE_DEVICES is read once, when the CUDA runtime starts, so it is tested in child processes:
// this test program runs itself again with the variable set and the child reports what it sees.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "support/temp_dir.h"

extern char** environ;

namespace conveyor {
namespace {

constexpr const char* kReportVariable = "CONVEYOR_TEST_VISIBLE_DEVICES_REPORT";

// The child's side: writes the GPUs and problems it sees, one per line. Skipped when run on its own.
TEST(VisibleDevicesChild, ReportsWhatItSees) {
  const char* report_path = std::getenv(kReportVariable);
  if (report_path == nullptr) GTEST_SKIP() << "runs only as the child of VisibleDevices tests";
  std::ofstream report(report_path);
  for (const GpuInfo& gpu : list_gpus()) report << "gpu " << gpu.index << " " << gpu.pci_bus_id << "\n";
  for (const std::string& problem : version_problems(library_versions()))
    report << "problem " << problem << "\n";
  const Placement placement = resolve(DeviceSpec::parse("auto"));
  report << "placement " << (placement.gpu ? "gpu" : "cpu") << " " << placement.reason << "\n";
}

// Runs this program's child test with CUDA_VISIBLE_DEVICES=value; returns the child's report lines.
std::vector<std::string> run_child(const std::string& visible) {
  testing::TempDir dir;
  const std::string report_path = (dir / "report.txt").string();
  std::vector<std::string> variables;
  for (char** variable = environ; *variable; ++variable)
    if (!std::string_view(*variable).starts_with("CUDA_VISIBLE_DEVICES=")) variables.emplace_back(*variable);
  variables.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  // append, not operator+: GCC 12 warns falsely (-Warray-bounds) on `string&& + "="` inlined here.
  variables.push_back(std::string(kReportVariable).append("=").append(report_path));
  std::vector<char*> envp;
  envp.reserve(variables.size() + 1);
  for (std::string& variable : variables) envp.push_back(variable.data());
  envp.push_back(nullptr);
  std::string program = "/proc/self/exe", filter = "--gtest_filter=VisibleDevicesChild.*";
  std::vector<char*> argv = {program.data(), filter.data(), nullptr};

  pid_t child = 0;
  EXPECT_EQ(posix_spawn(&child, program.c_str(), nullptr, nullptr, argv.data(), envp.data()), 0);
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed, status " << status;
  std::vector<std::string> lines;
  std::ifstream report(report_path);
  for (std::string line; std::getline(report, line);) lines.push_back(line);
  return lines;
}

// The UUID form CUDA_VISIBLE_DEVICES accepts: it names a card whatever the parent's own variable says.
std::string uuid_of(int device) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, device) != cudaSuccess) return {};
  const auto* b = reinterpret_cast<const unsigned char*>(properties.uuid.bytes);
  char text[64];
  std::snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return text;
}

TEST(VisibleDevices, AnEmptyListHidesEveryGpuAndTheProblemSaysSo) {
  if (list_gpus().empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const auto lines = run_child("");
  ASSERT_FALSE(lines.empty());
  bool blamed = false, on_cpu = false;
  for (const std::string& line : lines) {
    EXPECT_FALSE(line.starts_with("gpu ")) << line;
    blamed |= line.starts_with("problem ") &&
              line.find("CUDA_VISIBLE_DEVICES='' hides every GPU") != std::string::npos;
    on_cpu |= line.starts_with("placement cpu auto: no CUDA device visible");
  }
  EXPECT_TRUE(blamed);
  EXPECT_TRUE(on_cpu);
}

TEST(VisibleDevices, TheOnlyVisibleCardBecomesGpu0) {
  const auto gpus = list_gpus();
  if (gpus.empty()) GTEST_SKIP() << "no GPU visible: " << gpu_unavailable_reason();
  const GpuInfo& last = gpus.back();
  const auto lines = run_child(uuid_of(last.index));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0], "gpu 0 " + last.pci_bus_id);
  for (std::size_t i = 1; i < lines.size(); ++i) EXPECT_FALSE(lines[i].starts_with("gpu ")) << lines[i];
}

}  // namespace
}  // namespace conveyor
