#include "src/train/network_compiler.h"

#include <set>

#include "conveyor/error.h"

namespace conveyor::train {
namespace {

using Kind = Layer::Kind;

std::string dims(const nn::Shape4& s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w) + "x" + std::to_string(s.c);
}

class Compiler {
 public:
  Compiler(const NetworkShape& shape, ParameterLayout& layout, CompiledNetwork& net)
      : shape_(shape), layout_(layout), net_(net) {}

  // Where a sequence of layers sits: the whole network, or a branch of a residual block.
  enum class Place { network, main_branch, shortcut };

  // The nodes of `layers`, the first reading `input`; names under `prefix`. At the network's level the dense
  // layer ends the sequence and becomes the classifier.
  std::vector<std::unique_ptr<Node>> sequence(const std::vector<Layer>& layers, const std::string& prefix,
                                              Activation& input, Place place) {
    std::vector<std::unique_ptr<Node>> nodes;
    Activation* current = &input;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const Layer& layer = layers[i];
      const std::string name = claim(prefix, layer, i);
      const bool next_is_relu = i + 1 < layers.size() && layers[i + 1].kind == Kind::relu;
      // Every layer but a convolution writes its input's gradient, so the network's input (which goes
      // without one otherwise) needs one then. A residual block and the classifier decide for themselves.
      if (layer.kind != Kind::convolution && layer.kind != Kind::residual && layer.kind != Kind::dense)
        current->with_grad = true;
      switch (layer.kind) {
        case Kind::convolution: {
          const nn::ConvGeometry g{current->shape, layer.outputs, layer.size, layer.stride,
                                   layer.pad < 0 ? layer.size / 2 : layer.pad};
          nn::check_geometry(where(layer, name), g);
          nodes.push_back(std::make_unique<ConvNode>(name, g, *current, layout_));
          break;
        }
        case Kind::batch_norm: {
          nn::BatchNormOptions options = shape_.batch_norm;
          const bool ends_block = place == Place::main_branch && i + 1 == layers.size();
          options.relu = ends_block || next_is_relu;
          options.residual = ends_block;
          nn::check_batch_norm(where(layer, name), current->shape, options);
          nodes.push_back(std::make_unique<BatchNormNode>(name, options, *current, layout_));
          if (next_is_relu) ++i;  // folded into the batch norm
          break;
        }
        case Kind::relu:
          nodes.push_back(std::make_unique<ReluNode>(name, *current));
          break;
        case Kind::max_pool:
        case Kind::average_pool: {
          const nn::PoolGeometry g{current->shape, layer.size, layer.stride, layer.pad};
          nn::check_geometry(where(layer, name), g);
          nodes.push_back(std::make_unique<PoolNode>(
              name, g, layer.kind == Kind::max_pool ? nn::PoolMode::max : nn::PoolMode::average, false,
              *current));
          break;
        }
        case Kind::global_average_pool:
          nodes.push_back(std::make_unique<PoolNode>(name, nn::PoolGeometry{current->shape, 1, 1, 0},
                                                     nn::PoolMode::average, true, *current));
          break;
        case Kind::dense:
          classifier(layer, name, *current, place, i + 1 == layers.size());
          return nodes;
        case Kind::residual:
          if (place != Place::network) refuse(layer, name, "residual blocks do not nest");
          nodes.push_back(residual(layer, name, *current));
          break;
      }
      current = &nodes.back()->output();
    }
    if (place == Place::network) {
      if (layers.empty()) throw InvalidArgument("network: the description has no layers");
      const Layer& last = layers.back();
      throw InvalidArgument("network: the last layer must be a dense layer (the classifier, " +
                            std::to_string(shape_.classes) + " outputs); it is " + to_string(last.kind) +
                            " '" + (last.name.empty() ? std::to_string(layers.size() - 1) : last.name) + "'");
    }
    return nodes;
  }

 private:
  static std::string where(const Layer& layer, const std::string& name) {
    return std::string("network: ") + to_string(layer.kind) + " '" + name + "'";
  }
  [[noreturn]] static void refuse(const Layer& layer, const std::string& name, const std::string& why) {
    throw InvalidArgument(where(layer, name) + ": " + why);
  }

  // The layer's full name: its own part (given, or its index) under the prefix; each name once.
  std::string claim(const std::string& prefix, const Layer& layer, std::size_t index) {
    const std::string own = layer.name.empty() ? std::to_string(index) : layer.name;
    const std::string name = prefix.empty() ? own : prefix + "." + own;
    if (!names_.insert(name).second)
      throw InvalidArgument("network: two layers are named '" + name +
                            "' (their parameters would share names; rename one with .named())");
    return name;
  }

  void classifier(const Layer& layer, const std::string& name, Activation& input, Place place, bool last) {
    if (place != Place::network) refuse(layer, name, "a dense layer cannot be inside a residual block");
    if (!last) refuse(layer, name, "the dense layer (the classifier) must be the network's last layer");
    if (input.shape.h != 1 || input.shape.w != 1)
      refuse(layer, name,
             "its input is " + dims(input.shape) +
                 "; it takes one feature vector per image (put global_avg_pool() before it)");
    if (layer.outputs != shape_.classes)
      refuse(layer, name,
             "it gives " + std::to_string(layer.outputs) + " outputs, the trainer has " +
                 std::to_string(shape_.classes) + " classes (TrainerOptions::num_classes)");
    const int in = input.shape.c;
    input.with_grad = true;
    net_.features = &input;
    net_.classifier = name;
    net_.classifier_weight =
        layout_.add(name + ".weight", ParamGroup::weights,
                    static_cast<std::size_t>(in) * static_cast<std::size_t>(layer.outputs),
                    ParamInit::uniform_fan_in, in, {layer.outputs, in});
    net_.classifier_bias =
        layout_.add(name + ".bias", ParamGroup::vectors, static_cast<std::size_t>(layer.outputs),
                    ParamInit::uniform_fan_in, in);
  }

  std::unique_ptr<Node> residual(const Layer& block, const std::string& name, Activation& input) {
    if (block.main.empty()) refuse(block, name, "its main branch is empty");
    if (block.main.front().kind != Kind::convolution)
      refuse(block, name,
             std::string("its main branch must start with a conv (it starts with ") +
                 to_string(block.main.front().kind) + ")");
    if (block.main.back().kind != Kind::batch_norm)
      refuse(block, name,
             std::string("its main branch must end with a batch_norm, into which the add and the ReLU are "
                         "fused (it ends with ") +
                 to_string(block.main.back().kind) + ")");
    // The identity, or a shortcut that does not start with a convolution, writes the block input's gradient
    // (which a convolution may skip only for the network's input).
    if (block.shortcut.empty() || block.shortcut.front().kind != Kind::convolution) input.with_grad = true;
    std::vector<std::unique_ptr<Node>> main = sequence(block.main, name, input, Place::main_branch);
    std::vector<std::unique_ptr<Node>> shortcut =
        sequence(block.shortcut, name + "." + block.shortcut_name, input, Place::shortcut);
    Activation& sum = shortcut.empty() ? input : shortcut.back()->output();
    const nn::Shape4 out = main.back()->output().shape;
    if (out != sum.shape)
      refuse(
          block, name,
          "its main branch gives " + dims(out) + ", its shortcut " +
              (shortcut.empty() ? "(the identity) " : "") + "gives " + dims(sum.shape) +
              (shortcut.empty() ? ": give it a shortcut that changes the shape (a 1x1 conv with the stride, "
                                  "and a batch_norm)"
                                : ""));
    static_cast<BatchNormNode&>(*main.back()).add_before_relu(sum);
    return std::make_unique<ResidualNode>(name, std::move(main), std::move(shortcut));
  }

  const NetworkShape& shape_;
  ParameterLayout& layout_;
  CompiledNetwork& net_;
  std::set<std::string> names_;
};

}  // namespace

std::unique_ptr<CompiledNetwork> compile_network(const NetworkDescription& description,
                                                 const NetworkShape& shape, ParameterLayout& layout) {
  if (shape.batch < 1 || shape.input.empty() || shape.classes < 2)
    throw InvalidArgument("network: batch, input shape and classes (at least 2) must be positive");
  auto net = std::make_unique<CompiledNetwork>();
  net->input.shape = {shape.batch, shape.input.height, shape.input.width, shape.input.channels};
  net->input.name = "normalized input";
  net->input.with_grad = false;  // unless a layer other than a convolution reads it
  Compiler compiler(shape, layout, *net);
  net->nodes = compiler.sequence(description.layers, "", net->input, Compiler::Place::network);
  return net;
}

}  // namespace conveyor::train
