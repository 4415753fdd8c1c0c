// A network description checked and turned into nodes (network_nodes.h) for one batch size and input
// shape: what Network runs. The rules a description must keep, and the names its parameters get, are in
// conveyor/train/network.h; a broken rule is an InvalidArgument naming the layer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "conveyor/image.h"
#include "conveyor/train/network.h"
#include "src/train/layers/batch_norm.h"
#include "src/train/layers/context.h"
#include "src/train/network_nodes.h"
#include "src/train/parameters.h"

namespace conveyor::train {

// What a description is compiled for.
struct NetworkShape {
  int batch = 256;
  ImageShape input{28, 28, 1};
  int classes = 10;
  nn::BatchNormOptions batch_norm;  // relu/residual are set per layer
};

struct CompiledNetwork {
  Activation input;                          // the normalized images
  std::vector<std::unique_ptr<Node>> nodes;  // every layer before the classifier, in order
  Activation* features = nullptr;            // the classifier's input: the last node's output
  // The classifier (the description's dense layer) and the loss.
  std::string classifier;
  ParamRef classifier_weight, classifier_bias;
  std::unique_ptr<nn::Dense> dense;
  std::unique_ptr<nn::SoftmaxCrossEntropy> loss;
  nn::Buffer logits, dlogits, row_loss, row_correct, labels;
  nn::Buffer first_logits;  // evaluation with the mirror image: the first pass's logits
};

// Declares the parameters in `layout` in the description's order (each layer's in PyTorch's order) and
// builds the nodes; allocates nothing.
std::unique_ptr<CompiledNetwork> compile_network(const NetworkDescription& description,
                                                 const NetworkShape& shape, ParameterLayout& layout);

}  // namespace conveyor::train
