// examples/custom_network as a user runs it: a network described in the program, trained on the Fashion-MNIST
// JPEGs by conveyor's Trainer, prints one line per step and ends with "final loss A -> B"; on the CPU
// reference the loss falls clearly in 60 steps. A second case runs it on a GPU where there is one.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conveyor/cuda/device.h"
#include "support/subprocess.h"

namespace {

// Where the fixture made the JPEGs, and the program: or $CONVEYOR_TEST_FASHION_MNIST and
// $CONVEYOR_CUSTOM_NETWORK (the suite copied elsewhere, e.g. by scripts/gpu_test_run.sh).
const std::filesystem::path kData =
    conveyor::testing::program_path("CONVEYOR_TEST_FASHION_MNIST", CONVEYOR_TEST_FASHION_MNIST);

struct Outcome {
  int status = -1;
  std::vector<std::string> lines;
  int step_lines = 0;
  double first = 0, last = 0;  // from "final loss A -> B"
  bool final_line = false;
};

Outcome run(const std::string& device, int steps) {
  const std::string command =
      conveyor::testing::program_path("CONVEYOR_CUSTOM_NETWORK", CONVEYOR_CUSTOM_NETWORK) + " --data " +
      kData.string() + " --device " + device + " --steps " + std::to_string(steps) + " --threads 2 2>&1";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  Outcome result;
  char buffer[4096];
  while (pipe && std::fgets(buffer, sizeof buffer, pipe.get())) {
    std::string line = buffer;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    if (line.rfind("step ", 0) == 0) ++result.step_lines;
    result.final_line = result.final_line ||
                        std::sscanf(line.c_str(), "final loss %lf -> %lf", &result.first, &result.last) == 2;
    result.lines.push_back(line);
  }
  result.status = pipe ? ::pclose(pipe.release()) : -1;
  return result;
}

std::string tail(const Outcome& r) {
  std::string text;
  for (std::size_t i = r.lines.size() > 12 ? r.lines.size() - 12 : 0; i < r.lines.size(); ++i)
    text += r.lines[i] + "\n";
  return text;
}

void expect_learns(const Outcome& r, int steps) {
  ASSERT_EQ(r.status, 0) << tail(r);
  EXPECT_EQ(r.step_lines, steps) << tail(r);
  ASSERT_TRUE(r.final_line) << tail(r);
  // Ten classes start near ln 10 = 2.30; a network that learns is well below it after 60 steps of 32.
  EXPECT_GT(r.first, 1.5) << tail(r);
  EXPECT_LT(r.last, 0.7 * r.first) << tail(r);
}

TEST(CustomNetwork, TheLossFallsClearlyInSixtyStepsOnTheCpu) {
  ASSERT_TRUE(std::filesystem::exists(kData / "train.txt")) << "the fashion_mnist_jpegs fixture did not run";
  expect_learns(run("cpu", 60), 60);
}

TEST(CustomNetwork, TheLossFallsClearlyInSixtyStepsOnAGpu) {
  if (conveyor::list_gpus().empty()) GTEST_SKIP() << "no CUDA device visible";
  ASSERT_TRUE(std::filesystem::exists(kData / "train.txt")) << "the fashion_mnist_jpegs fixture did not run";
  expect_learns(run("gpu", 60), 60);
}

}  // namespace
