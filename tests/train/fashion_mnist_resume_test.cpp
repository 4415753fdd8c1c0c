// train_fashion_mnist as a user runs it: stopped in the middle of an epoch (--stop-after, as a preemption
// would) and resumed in a new process with --resume, it ends exactly where an uninterrupted run with the
// same seed ends (the same later epoch lines and final test accuracy, printed to two decimals, on the
// deterministic CPU reference). It also refuses to silently start over on an existing checkpoint.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/subprocess.h"
#include "support/temp_dir.h"

namespace {

// Where the fixture made the JPEGs, and the program: or $CONVEYOR_TEST_FASHION_MNIST and
// $CONVEYOR_TRAIN_FASHION_MNIST (the suite copied elsewhere, e.g. by scripts/gpu_test_run.sh).
const std::filesystem::path kData =
    conveyor::testing::program_path("CONVEYOR_TEST_FASHION_MNIST", CONVEYOR_TEST_FASHION_MNIST);

struct Outcome {
  int status = -1;
  std::vector<std::string> lines;
};

Outcome train(const std::string& arguments) {
  const std::string command =
      conveyor::testing::program_path("CONVEYOR_TRAIN_FASHION_MNIST", CONVEYOR_TRAIN_FASHION_MNIST) +
      " --data " + kData.string() +
      " --device cpu --threads 2 --train-subset 256 --test-subset 128 --batch 64"
      " --width 4 --epochs 3 --seed 4 --eval-every 1 " +
      arguments + " 2>&1";
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  Outcome result;
  char buffer[4096];
  while (pipe && std::fgets(buffer, sizeof buffer, pipe.get())) {
    std::string line = buffer;
    if (!line.empty() && line.back() == '\n') line.pop_back();
    result.lines.push_back(line);
  }
  result.status = pipe ? ::pclose(pipe.release()) : -1;
  return result;
}

// Epoch `epoch`'s line without its timing columns (images/s, data wait and seconds vary run to run); only
// its test accuracy when `test_only` (a resumed epoch's loss and train accuracy cover its later steps only).
std::string epoch_result(const Outcome& r, int epoch, bool test_only = false) {
  for (const std::string& line : r.lines) {
    std::istringstream fields(line);
    int number = 0;
    std::string loss, train, test;
    if (fields >> number >> loss >> train >> test && number == epoch && !test.empty() && test.back() == '%')
      return std::to_string(number) + (test_only ? "" : " " + loss + " " + train) + " " + test;
  }
  return "(no line for epoch " + std::to_string(epoch) + ")";
}

std::string final_line(const Outcome& r) {
  for (const std::string& line : r.lines)
    if (line.rfind("final test accuracy", 0) == 0) return line.substr(0, line.find(" after"));
  return "(no final line)";
}

TEST(FashionMnistResume, AnInterruptedRunResumedEndsExactlyAsAnUninterruptedOne) {
  ASSERT_TRUE(std::filesystem::exists(kData / "train.txt")) << "the fashion_mnist_jpegs fixture did not run";
  const conveyor::testing::TempDir dir;
  const std::string checkpoint = (dir / "run.json").string();
  const Outcome whole = train("");
  ASSERT_EQ(whole.status, 0);
  for (int epoch = 1; epoch <= 3; ++epoch) ASSERT_NE(epoch_result(whole, epoch)[0], '(') << "no epoch line";
  ASSERT_NE(final_line(whole)[0], '(') << "no final line";
  // 4 steps an epoch: stop after 6, in the middle of the second of 3 epochs, then resume in a new process.
  const Outcome first = train("--checkpoint " + checkpoint + " --stop-after 6");
  ASSERT_EQ(first.status, 0);
  const Outcome again = train("--checkpoint " + checkpoint);  // forgot --resume: refused, nothing overwritten
  EXPECT_NE(again.status, 0);
  bool named = false;
  for (const std::string& line : again.lines)
    named = named || line.find("--resume " + checkpoint) != std::string::npos;
  EXPECT_TRUE(named) << "the refusal should say how to resume";
  const Outcome rest = train("--checkpoint " + checkpoint + " --resume " + checkpoint);
  ASSERT_EQ(rest.status, 0);
  EXPECT_EQ(epoch_result(first, 1), epoch_result(whole, 1));
  EXPECT_EQ(epoch_result(rest, 2, true), epoch_result(whole, 2, true));
  EXPECT_EQ(epoch_result(rest, 3), epoch_result(whole, 3));
  EXPECT_EQ(final_line(rest), final_line(whole));
}

}  // namespace
