// The model the prefetch mode feeds: one Trainer on one GPU (or the CPU), or data-parallel replicas over
// NCCL — several GPUs driven by this process (--gpus N), or this process's GPU among the ranks a launcher
// started (scripts/launch.sh, torchrun).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/train/data_parallel.h"
#include "conveyor/train/rendezvous.h"
#include "conveyor/train/trainer.h"
#include "modes.h"

namespace feed_vs_prefetch {

class Training {
 public:
  // Data-parallel when the setup has several local GPUs or several ranks; meets the other ranks (env://)
  // here.
  explicit Training(const Setup& setup);

  void warmup();
  // One batch per local replica.
  void step(std::span<const conveyor::DeviceBatch> batches);
  // Averaged over every replica of the job (a collective when there are other ranks: all call it).
  conveyor::train::StepStats last_step();
  void synchronize();
  std::size_t replicas() const noexcept;
  conveyor::train::Trainer& replica(std::size_t i);
  std::string placement() const;

 private:
  std::unique_ptr<conveyor::train::Trainer> single_;
  std::unique_ptr<conveyor::train::Rendezvous> rendezvous_;
  std::unique_ptr<conveyor::train::DataParallelTrainer> parallel_;
};

}  // namespace feed_vs_prefetch
