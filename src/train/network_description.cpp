// The public description of a network (conveyor/train/network.h): the layers' makers, names, a readable
// listing, and the two built-in ResNets as descriptions.
#include <string>

#include "conveyor/error.h"
#include "conveyor/train/network.h"

namespace conveyor::train {
namespace {

// Letters, digits, '_' and '-' in dot-separated parts: what a PyTorch state_dict key is made of.
void check_name(const std::string& name, const char* what) {
  bool ok =
      !name.empty() && name.front() != '.' && name.back() != '.' && name.find("..") == std::string::npos;
  for (const char c : name)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                c == '-' || c == '.');
  if (!ok)
    throw InvalidArgument(std::string("network: ") + what + " '" + name +
                          "' is not a valid name (letters, digits, '_' and '-', in parts joined by '.')");
}

void describe_into(const std::vector<Layer>& layers, const std::string& indent, std::string& out) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    const std::string name = " (" + (l.name.empty() ? std::to_string(i) : l.name) + ")";
    const std::string window = std::to_string(l.size) + "x" + std::to_string(l.size) + "/" +
                               std::to_string(l.stride) + " pad " + std::to_string(l.pad);
    switch (l.kind) {
      case Layer::Kind::convolution:
        out += indent + "conv " + std::to_string(l.size) + "x" + std::to_string(l.size) + "/" +
               std::to_string(l.stride) + " pad " +
               (l.pad < 0 ? std::to_string(l.size / 2) : std::to_string(l.pad)) + " -> " +
               std::to_string(l.outputs) + name + "\n";
        break;
      case Layer::Kind::batch_norm:
        out += indent + "batch_norm" + name + "\n";
        break;
      case Layer::Kind::relu:
        out += indent + "relu" + name + "\n";
        break;
      case Layer::Kind::max_pool:
        out += indent + "max_pool " + window + name + "\n";
        break;
      case Layer::Kind::average_pool:
        out += indent + "avg_pool " + window + name + "\n";
        break;
      case Layer::Kind::global_average_pool:
        out += indent + "global_avg_pool" + name + "\n";
        break;
      case Layer::Kind::dense:
        out += indent + "dense -> " + std::to_string(l.outputs) + name + "\n";
        break;
      case Layer::Kind::residual:
        out += indent + "residual" + name + ": relu(main + shortcut)\n" + indent + "  main:\n";
        describe_into(l.main, indent + "    ", out);
        out += indent + "  shortcut (" + l.shortcut_name + "):" + (l.shortcut.empty() ? " identity\n" : "\n");
        describe_into(l.shortcut, indent + "    ", out);
        break;
    }
  }
}

}  // namespace

const char* to_string(Layer::Kind kind) noexcept {
  switch (kind) {
    case Layer::Kind::convolution:
      return "conv";
    case Layer::Kind::batch_norm:
      return "batch_norm";
    case Layer::Kind::relu:
      return "relu";
    case Layer::Kind::max_pool:
      return "max_pool";
    case Layer::Kind::average_pool:
      return "avg_pool";
    case Layer::Kind::global_average_pool:
      return "global_avg_pool";
    case Layer::Kind::dense:
      return "dense";
    case Layer::Kind::residual:
      break;
  }
  return "residual";
}

Layer Layer::named(std::string new_name) const& { return Layer(*this).named(std::move(new_name)); }

Layer Layer::named(std::string new_name) && {
  check_name(new_name, "layer name");
  name = std::move(new_name);
  return std::move(*this);
}

Layer Layer::shortcut_named(std::string new_name) const& {
  return Layer(*this).shortcut_named(std::move(new_name));
}

Layer Layer::shortcut_named(std::string new_name) && {
  if (kind != Kind::residual) throw InvalidArgument("network: only a residual block has a shortcut to name");
  check_name(new_name, "shortcut name");
  shortcut_name = std::move(new_name);
  return std::move(*this);
}

std::string NetworkDescription::describe() const {
  std::string text;
  describe_into(layers, "", text);
  return text;
}

namespace layers {

Layer conv(int out_channels, int size, int stride, int pad) {
  return {
      .kind = Layer::Kind::convolution, .outputs = out_channels, .size = size, .stride = stride, .pad = pad};
}
Layer batch_norm() { return {.kind = Layer::Kind::batch_norm}; }
Layer relu() { return {.kind = Layer::Kind::relu}; }
Layer max_pool(int window, int stride, int pad) {
  return {.kind = Layer::Kind::max_pool, .size = window, .stride = stride, .pad = pad};
}
Layer avg_pool(int window, int stride, int pad) {
  return {.kind = Layer::Kind::average_pool, .size = window, .stride = stride, .pad = pad};
}
Layer global_avg_pool() { return {.kind = Layer::Kind::global_average_pool}; }
Layer dense(int outputs) { return {.kind = Layer::Kind::dense, .outputs = outputs}; }

Layer residual(std::vector<Layer> main, std::vector<Layer> shortcut) {
  return {.kind = Layer::Kind::residual, .main = std::move(main), .shortcut = std::move(shortcut)};
}

}  // namespace layers

}  // namespace conveyor::train
