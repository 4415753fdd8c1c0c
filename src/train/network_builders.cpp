// The built-in networks as descriptions. Their layers, parameter names (torchvision's), parameter order
// and so their initial values from a seed are those of the ResNets this project wrote by hand before
// networks were data (tests/train/network_builders_test.cpp holds them to it).
#include <string>
#include <vector>

#include "conveyor/train/network.h"

namespace conveyor::train {
namespace {

using namespace layers;

// A stem, stages of BasicBlocks (conv-BN-ReLU, conv-BN, + shortcut, ReLU; a 1x1 convolution + BN on the
// shortcut where the shape changes; each stage after the first starts with stride 2), global average
// pooling and the classifier.
NetworkDescription resnet(std::vector<Layer> stem, int stem_channels, const std::vector<int>& widths,
                          int blocks, int classes) {
  NetworkDescription net(std::move(stem));
  int channels = stem_channels;
  for (std::size_t stage = 0; stage < widths.size(); ++stage)
    for (int b = 0; b < blocks; ++b) {
      const int stride = stage > 0 && b == 0 ? 2 : 1, out = widths[stage];
      std::vector<Layer> shortcut;
      if (stride != 1 || channels != out) shortcut = {conv(out, 1, stride, 0), batch_norm()};
      net.layers.push_back(residual({conv(out, 3, stride, 1).named("conv1"), batch_norm().named("bn1"),
                                     relu(), conv(out, 3, 1, 1).named("conv2"), batch_norm().named("bn2")},
                                    std::move(shortcut))
                               .named("layer" + std::to_string(stage + 1) + "." + std::to_string(b))
                               .shortcut_named("downsample"));
      channels = out;
    }
  net.layers.push_back(global_avg_pool().named("avgpool"));
  net.layers.push_back(dense(classes).named("fc"));
  return net;
}

}  // namespace

NetworkDescription resnet18(int classes) {
  return resnet({conv(64, 7, 2, 3).named("conv1"), batch_norm().named("bn1"), relu(),
                 max_pool(3, 2, 1).named("maxpool")},
                64, {64, 128, 256, 512}, 2, classes);
}

NetworkDescription small_resnet(int width, int blocks_per_stage, int classes) {
  return resnet({conv(width, 3, 1, 1).named("conv1"), batch_norm().named("bn1"), relu()}, width,
                {width, 2 * width, 4 * width}, blocks_per_stage, classes);
}

}  // namespace conveyor::train
