// Networks as data: a network is a sequence of layers and residual blocks, which a Trainer builds and trains
// on either backend (the CPU reference, or cuDNN and cuBLAS with the step replayed as a CUDA graph, cached
// convolution algorithms, checkpoints and data-parallel training, as for the built-in ResNets).
//
//   using namespace conveyor::train::layers;
//   conveyor::train::NetworkDescription net{
//       conv(32, 3), batch_norm(), relu(),                                   // conv 3x3, pad 1, no bias
//       residual({conv(32, 3), batch_norm(), relu(), conv(32, 3), batch_norm()}),  // relu(main(x) + x)
//       max_pool(2, 2),
//       residual({conv(64, 3, 2), batch_norm(), relu(), conv(64, 3), batch_norm()},
//                {conv(64, 1, 2), batch_norm()}),                           // a shortcut that changes shape
//       global_avg_pool(), dense(10)};
//   conveyor::train::Trainer trainer({.network = net, .num_classes = 10, .input = {28, 28, 1}});
//
// What the layers compute (activations NHWC, as the backends store them):
//   conv(k, size, stride, pad)   a square cross-correlation to k channels, without bias (the batch norm
//                                after it has one); pad -1 = size / 2
//   batch_norm()                 per channel, with running statistics (TrainerOptions::bn_momentum,
//                                bn_epsilon)
//   relu()                       max(x, 0); right after a batch_norm it is folded into it (one fused kernel)
//   max_pool / avg_pool(window, stride, pad)
//                                average pooling counts the padding, as PyTorch's default
//   global_avg_pool()            the mean over each image's height and width
//   dense(n)                     the classifier: n = TrainerOptions::num_classes outputs (with bias), fed
//                                with one feature vector per image; softmax cross-entropy follows it
//   residual(main, shortcut)     relu(main(x) + shortcut(x)), shortcut empty: the identity. The main
//                                branch starts with a conv and ends with a batch_norm, into which the add
//                                and the ReLU are fused (ResNet's BasicBlock and Bottleneck have this form).
// A network ends with its one dense layer, whose input is 1x1 (global_avg_pool before it). Residual blocks do
// not nest. A description that breaks a rule is refused by Trainer's constructor with InvalidArgument naming
// the layer and the rule.
//
// Parameter names (checkpoints, Trainer::parameters()) are PyTorch's state_dict keys of the equivalent
// module: a layer is named by its index in its sequence, as nn.Sequential names its children ("0.weight",
// "1.running_mean"), or by the name given with .named(); a residual block's main-branch layers sit directly
// under the block and its shortcut's under "<block>.shortcut" (.shortcut_named() renames that part). A
// PyTorch twin that loads the weights:
//   class Residual(nn.Sequential):            # the main branch's layers are its children 0, 1, ...
//       def __init__(self, *main, shortcut=()):
//           super().__init__(*main); self.shortcut = nn.Sequential(*shortcut)
//       def forward(self, x): return torch.relu(super().forward(x) + self.shortcut(x))
// with one module per layer: nn.Conv2d(..., bias=False), nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d, nn.AvgPool2d,
// nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten()) and nn.Linear. Convolution filters are stored in
// PyTorch's layout (out, in, k, k).
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace conveyor::train {

// One layer of a network description (made by the functions of conveyor::train::layers).
struct Layer {
  enum class Kind {
    convolution,
    batch_norm,
    relu,
    max_pool,
    average_pool,
    global_average_pool,
    dense,
    residual
  };
  Kind kind = Kind::relu;
  std::string name{};  // the layer's part of its parameters' names; empty: its index in its sequence
  int outputs = 0;     // convolution: output channels; dense: outputs
  int size = 0;        // convolution: kernel size; max/avg pool: window size
  int stride = 1;
  int pad = 0;
  std::vector<Layer> main{}, shortcut{};   // residual: the two branches (shortcut empty: identity)
  std::string shortcut_name = "shortcut";  // residual: the shortcut's part of its parameters' names

  // This layer named `name` (letters, digits, '_', '-' and '.' between parts): "conv1", or "layer1.0" for a
  // residual block.
  Layer named(std::string name) const&;
  Layer named(std::string name) &&;
  // A residual block whose shortcut's parameters are named "<block>.<name>.<index>" (torchvision's
  // "downsample").
  Layer shortcut_named(std::string name) const&;
  Layer shortcut_named(std::string name) &&;
};

// "conv", "batch_norm", "relu", "max_pool", "avg_pool", "global_avg_pool", "dense", "residual": the name of
// the function that makes a layer of this kind.
const char* to_string(Layer::Kind kind) noexcept;

// A network: its layers in order, from the input image to the classifier.
struct NetworkDescription {
  std::vector<Layer> layers;

  NetworkDescription() = default;
  NetworkDescription(std::initializer_list<Layer> list) : layers(list) {}
  explicit NetworkDescription(std::vector<Layer> list) : layers(std::move(list)) {}
  bool empty() const noexcept { return layers.empty(); }
  // One line per layer, indented by block: "conv 3x3/1 pad 1 -> 32 (conv1)", for logs and messages.
  std::string describe() const;
};

namespace layers {

Layer conv(int out_channels, int size, int stride = 1, int pad = -1);
Layer batch_norm();
Layer relu();
Layer max_pool(int window, int stride, int pad = 0);
Layer avg_pool(int window, int stride, int pad = 0);
Layer global_avg_pool();
Layer dense(int outputs);
Layer residual(std::vector<Layer> main, std::vector<Layer> shortcut = {});

}  // namespace layers

// torchvision's ResNet-18 (for 224x224 inputs): 7x7/2 stem, 3x3/2 max pool, four stages of two BasicBlocks
// (64, 128, 256, 512 channels; a 1x1/2 convolution + batch norm shortcut where the shape changes), global
// average pooling, a linear classifier. Parameters named as torchvision's state_dict.
NetworkDescription resnet18(int classes = 1000);
// The small ResNet for 28x28 inputs (Fashion-MNIST): 3x3 stem of `width` channels, three stages of
// `blocks_per_stage` BasicBlocks (width, 2 x width, 4 x width channels; the second and third stages start
// with stride 2), global average pooling, a linear classifier; named as ResNet-18.
NetworkDescription small_resnet(int width = 32, int blocks_per_stage = 2, int classes = 10);

}  // namespace conveyor::train
