// The model the prefetch mode feeds: one Trainer on one GPU (or the CPU), or, when a launcher started
// several ranks (scripts/launch.sh, torchrun, mpirun, srun), this rank's replica of a data-parallel job:
// one GPU per process through NCCL, or CPU processes through MPI.
#pragma once

#include <memory>
#include <string>

#include "conveyor/cuda/device_batch.h"
#include "conveyor/train/data_parallel.h"
#include "conveyor/train/trainer.h"
#include "modes.h"

namespace feed_vs_prefetch {

class Training {
 public:
  // Data-parallel when the setup has several ranks: meets the other ranks here.
  explicit Training(const Setup& setup);

  void warmup();
  void step(const conveyor::DeviceBatch& batch);
  // Averaged over every rank of the job (a collective when there are other ranks: all call it).
  conveyor::train::StepStats last_step();
  void synchronize();
  // The trainer of this process (the data-parallel job's replica).
  conveyor::train::Trainer& trainer();
  std::string placement() const;

 private:
  std::unique_ptr<conveyor::train::Trainer> single_;
  std::unique_ptr<conveyor::train::DataParallelTrainer> parallel_;
};

}  // namespace feed_vs_prefetch
