// The model the prefetch mode feeds: one Trainer on one GPU (or the CPU), or data-parallel replicas over
// NCCL — several GPUs driven by this process (--gpus N), or this process's GPU among the ranks a launcher
// started (scripts/launch.sh, torchrun).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/progress_watch.h"
#include "conveyor/train/data_parallel.h"
#include "conveyor/train/rendezvous.h"
#include "conveyor/train/trainer.h"
#include "modes.h"

namespace feed_vs_prefetch {

class Training {
 public:
  // Data-parallel when the setup has several local GPUs or several ranks; meets the other ranks (env://)
  // here.
  // The replicas' threads join `watch` (may be null) so that a stall report names them.
  Training(const Setup& setup, std::shared_ptr<conveyor::ProgressWatch> watch);

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
