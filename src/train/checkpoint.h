// Checkpoint files: a text header (format version, model, every tensor's name, group and size, in
// torchvision's names), then the float32 arrays: weights, batch-norm scales/biases, running statistics,
// and the two momentum buffers. Loading checks the header against the model it loads into.
#pragma once

#include <filesystem>

#include "src/train/network.h"
#include "src/train/parameters.h"

namespace conveyor::train {

// Writes the host copy of `params`; throws IoError naming the file when it cannot be written.
void save_checkpoint(const std::filesystem::path& path, const NetworkSpec& spec, ParameterStore& params);
// Reads into the host copy of `params`; throws IoError on a missing or truncated file and
// InvalidArgument (naming the first difference) when the checkpoint holds another model.
void load_checkpoint(const std::filesystem::path& path, const NetworkSpec& spec, ParameterStore& params);

}  // namespace conveyor::train
