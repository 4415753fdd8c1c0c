// The communicator of a job of one process that no MPI launcher started: every collective over one rank
// leaves its data as it is (the average of one value is that value, rank 0's broadcast reaches only rank
// 0). So a data-parallel program run alone needs neither NCCL nor MPI, and trains exactly as a plain
// Trainer does.
#pragma once

#include <string>

#include "src/train/distributed/communicator.h"

namespace conveyor::train {

class SingleRankCommunicator final : public Communicator {
 public:
  SingleRankCommunicator() noexcept : Communicator(0, 1) {}

  std::string describe() const override { return "one rank (no collectives)"; }
  void attach(nn::Context&) override {}
  void fork() override {}
  void all_reduce_average(void*, std::size_t, nn::DType, const std::string&) override {}
  void broadcast(void*, std::size_t, nn::DType, int, const std::string&) override {}
  void join() override {}
  void average_on_host(std::span<double>) override {}
  void barrier() override {}
  void abandon() noexcept override {}
};

}  // namespace conveyor::train
