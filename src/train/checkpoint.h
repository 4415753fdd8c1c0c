// Checkpoints that resume a run exactly. One checkpoint is three files:
//   <file>                          JSON: format version, the model's options, the training progress (steps,
//                                   epoch, step in the epoch, learning rate, the data iterator's state) and
//                                   the size and XXH64 of the two files below; an XXH64 of its own content
//   <stem>.step-<N>.safetensors     weights, batch-norm scales/shifts and running statistics, in PyTorch's
//                                   names, shapes and layouts (torch's load_state_dict takes them as they
//                                   are)
//   <stem>.step-<N>.optimizer.safetensors   the SGD momentum buffers, same names
// (<stem> is <file> without its extension, N the progress's step count). The momentum is float32 tensors
// rather than JSON numbers: exact, and a third of the size for ResNet-18's 11.7 M parameters.
//
// Saving writes the two tensor files, then the JSON, each atomically (conveyor/atomic_file.h): the JSON is
// the commit. A crash before it leaves the previous checkpoint whole (its tensor files have other step
// numbers); afterwards the previous checkpoint's tensor files are removed. Loading checks everything
// before it changes any parameter, and names the file and what is wrong: missing, truncated, changed
// after writing (checksum), another model, a tensor missing or of another shape.
#pragma once

#include <filesystem>

#include "conveyor/train/trainer.h"
#include "src/train/network.h"
#include "src/train/parameters.h"

namespace conveyor::train {

// Writes the host copy of `params` (download it first on a GPU) with `options` and `progress`.
void save_checkpoint(const std::filesystem::path& file, const TrainerOptions& options, ParameterStore& params,
                     const TrainingProgress& progress);
// Reads a checkpoint into the host copy of `params` (upload it afterwards on a GPU) and returns its
// progress; the learning rate it was saved with is progress.learning_rate.
TrainingProgress load_checkpoint(const std::filesystem::path& file, const TrainerOptions& options,
                                 ParameterStore& params);

}  // namespace conveyor::train
