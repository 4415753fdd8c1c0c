#include "src/train/checkpoint.h"

#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "conveyor/atomic_file.h"
#include "conveyor/error.h"
#include "src/core/hex.h"
#include "src/train/safetensors.h"

namespace conveyor::train {
namespace {

using conveyor::detail::hex;
using nlohmann::json;

constexpr const char* kFormat = "conveyor checkpoint";
constexpr int kVersion = 2;

// A user's network, layer by layer: what tells it from another in a checkpoint.
json network_json(const std::vector<Layer>& layers) {
  json list = json::array();
  for (const Layer& l : layers) {
    json layer = {{"kind", to_string(l.kind)}, {"name", l.name}};
    switch (l.kind) {
      case Layer::Kind::convolution:
      case Layer::Kind::max_pool:
      case Layer::Kind::average_pool:
        layer["outputs"] = l.outputs, layer["size"] = l.size, layer["stride"] = l.stride,
        layer["pad"] = l.pad;
        break;
      case Layer::Kind::dense:
        layer["outputs"] = l.outputs;
        break;
      case Layer::Kind::residual:
        layer["main"] = network_json(l.main);
        layer["shortcut"] = network_json(l.shortcut);
        layer["shortcut_name"] = l.shortcut_name;
        break;
      case Layer::Kind::batch_norm:
      case Layer::Kind::relu:
      case Layer::Kind::global_average_pool:
        break;
    }
    list.push_back(std::move(layer));
  }
  return list;
}

// What identifies the model a checkpoint fits (compared on load), and the options it trained with. The
// built-in networks keep the form they had before networks were data, so their checkpoints load both ways.
json model_json(const TrainerOptions& o) {
  json model = {{"kind", o.network.empty() ? to_string(o.model) : "custom"},
                {"classes", o.num_classes},
                {"input", {o.input.height, o.input.width, o.input.channels}}};
  if (!o.network.empty()) {
    model["network"] = network_json(o.network.layers);
  } else if (o.model == ModelKind::small_resnet) {
    model["width"] = o.width;
    model["blocks_per_stage"] = o.blocks_per_stage;
  }
  return model;
}

json options_json(const TrainerOptions& o) {
  return {{"precision", to_string(o.precision)},
          {"momentum", o.momentum},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov},
          {"seed", o.seed},
          {"bn_momentum", o.bn_momentum},
          {"bn_epsilon", o.bn_epsilon},
          {"batch", o.batch},
          {"mean", o.mean},
          {"std", o.std},
          {"fused_batch_norm", o.fused_batch_norm}};
}

// move(ours, theirs) for every element of a convolution filter of PyTorch's shape (K, C, R, S): its index in
// conveyor's KRSC layout and in PyTorch's KCRS layout. The one place the two layouts are related, for the way
// out and the way back.
template <class Move>
void for_each_filter_element(const ParamEntry& e, Move move) {
  const std::size_t k = static_cast<std::size_t>(e.shape[0]), c = static_cast<std::size_t>(e.shape[1]),
                    r = static_cast<std::size_t>(e.shape[2]), s = static_cast<std::size_t>(e.shape[3]);
  for (std::size_t o = 0; o < k; ++o)
    for (std::size_t y = 0; y < r; ++y)
      for (std::size_t x = 0; x < s; ++x)
        for (std::size_t i = 0; i < c; ++i)
          move(((o * r + y) * s + x) * c + i, ((o * c + i) * r + y) * s + x);
}

// The tensor's bytes as the checkpoint stores them: a convolution filter transposed from KRSC to PyTorch's
// KCRS, everything else as it is.
std::vector<float> to_torch_layout(const ParamEntry& e, const float* values) {
  std::vector<float> out(values, values + e.ref.count);
  if (e.krsc)
    for_each_filter_element(e, [&](std::size_t ours, std::size_t theirs) { out[theirs] = values[ours]; });
  return out;
}

void from_torch_layout(const ParamEntry& e, const float* torch, float* values) {
  if (!e.krsc) {
    std::memcpy(values, torch, e.ref.count * sizeof(float));
    return;
  }
  for_each_filter_element(e, [&](std::size_t ours, std::size_t theirs) { values[ours] = torch[theirs]; });
}

std::span<const std::uint8_t> bytes_of(const std::vector<float>& v) {
  return {reinterpret_cast<const std::uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// One tensor file: writes it atomically and returns its name, size and XXH64 for the JSON.
json write_tensors(const std::filesystem::path& path, std::span<const SafetensorsEntry> tensors,
                   const std::map<std::string, std::string>& metadata) {
  {
    AtomicFile file(path);
    write_safetensors(file, tensors, metadata);
    file.commit();
  }
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {{"name", path.filename().string()},
          {"bytes", bytes.size()},
          {"xxh64", hex(XXH64(bytes.data(), bytes.size(), 0))}};
}

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError("checkpoint '" + file.string() + "' cannot be read (missing?)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The checkpoint's JSON, checked against its own checksum; InvalidArgument naming the file otherwise.
json read_checkpoint_json(const std::filesystem::path& file) {
  const std::string where = "checkpoint '" + file.string() + "'";
  json document;
  try {
    document = json::parse(read_text(file));
  } catch (const json::parse_error& error) {
    throw InvalidArgument(where + " is not a checkpoint (truncated or not JSON: " + error.what() + ")");
  }
  if (!document.is_object() || document.value("format", "") != kFormat)
    throw InvalidArgument(where + " is not a checkpoint (no \"format\": \"" + kFormat + "\")");
  if (document.value("version", 0) != kVersion)
    throw InvalidArgument(where + " has format version " + document.value("version", json()).dump() +
                          ", this build reads " + std::to_string(kVersion));
  const json& body = document.at("state");
  const std::string text = body.dump();
  const std::string expected = hex(XXH64(text.data(), text.size(), 0));
  if (document.value("xxh64", "") != expected)
    throw InvalidArgument(where + ": checksum mismatch (written " + document.value("xxh64", "none") +
                          ", content gives " + expected + "): changed or damaged after it was written");
  return body;
}

// A tensor file the JSON names, checked for size and checksum before it is parsed.
SafetensorsFile read_tensor_file(const std::filesystem::path& checkpoint, const json& entry,
                                 const char* role) {
  const std::filesystem::path path = checkpoint.parent_path() / entry.at("name").get<std::string>();
  const std::string where =
      "checkpoint '" + checkpoint.string() + "': its " + role + " file '" + path.string() + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(where + " is missing");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto expected_size = entry.at("bytes").get<std::uint64_t>();
  if (bytes.size() != expected_size)
    throw InvalidArgument(where + " has " + std::to_string(bytes.size()) + " bytes, the checkpoint says " +
                          std::to_string(expected_size) +
                          (bytes.size() < expected_size ? " (truncated)" : ""));
  const std::string sum = hex(XXH64(bytes.data(), bytes.size(), 0));
  if (sum != entry.at("xxh64").get<std::string>())
    throw InvalidArgument(where + ": checksum mismatch (the checkpoint says " +
                          entry.at("xxh64").get<std::string>() + ", the file gives " + sum +
                          "): damaged or from another checkpoint");
  return SafetensorsFile::read(path);
}

// Values of entry `e` from `file`, in this build's layout, after checking dtype and shape.
std::vector<float> tensor_values(const SafetensorsFile& file, const std::filesystem::path& path,
                                 const ParamEntry& e) {
  const SafetensorsFile::Tensor& t = file.at(e.name);
  if (t.dtype != "F32" || t.shape != e.shape) {
    std::string shape;
    for (const std::int64_t d : e.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    throw InvalidArgument("checkpoint '" + path.string() + "': tensor '" + e.name +
                          "' is not F32 of shape (" + shape + ") as this model's is");
  }
  std::vector<float> torch(e.ref.count), values(e.ref.count);
  std::memcpy(torch.data(), t.bytes.data(), t.bytes.size());
  from_torch_layout(e, torch.data(), values.data());
  return values;
}

std::filesystem::path tensor_path(const std::filesystem::path& file, std::uint64_t steps,
                                  const char* suffix) {
  char step[32];
  std::snprintf(step, sizeof step, ".step-%012" PRIu64, steps);
  return file.parent_path() / (file.stem().string() + step + suffix);
}

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const TrainerOptions& options, ParameterStore& params,
                     const TrainingProgress& progress) {
  // What the previous checkpoint at this path used, to remove it once the new one is committed.
  std::vector<std::filesystem::path> previous;
  try {
    const json old = read_checkpoint_json(file);
    for (const char* role : {"weights", "optimizer"})
      previous.push_back(file.parent_path() / old.at("files").at(role).at("name").get<std::string>());
  } catch (const Error&) {
    // No usable previous checkpoint: nothing to clean up.
  } catch (const json::exception&) {
  }

  const std::vector<ParamEntry>& entries = params.layout().entries();
  // The bytes the entries point at: sized first, so that no span is taken into memory that moves later.
  std::vector<std::vector<float>> keep;
  keep.reserve(2 * entries.size());
  std::vector<std::string> batch_norms;  // prefixes of the batch norms, for torch's num_batches_tracked
  for (const ParamEntry& e : entries)
    if (e.name.ends_with(".running_mean")) batch_norms.push_back(e.name.substr(0, e.name.size() - 13));
  const std::vector<std::int64_t> tracked(batch_norms.size(), static_cast<std::int64_t>(progress.steps));
  std::vector<SafetensorsEntry> weights, momentum;
  for (const ParamEntry& e : entries) {
    keep.push_back(to_torch_layout(e, params.host(e.ref.group).data() + e.ref.offset));
    weights.push_back({e.name, "F32", e.shape, bytes_of(keep.back())});
    if (e.ref.group != ParamGroup::statistics) {
      keep.push_back(to_torch_layout(e, params.host_velocity(e.ref.group).data() + e.ref.offset));
      momentum.push_back({e.name, "F32", e.shape, bytes_of(keep.back())});
    }
  }
  // torch's BatchNorm2d keeps a step count too; with it, load_state_dict(strict=True) takes the file as it
  // is.
  for (std::size_t i = 0; i < batch_norms.size(); ++i)
    weights.push_back({batch_norms[i] + ".num_batches_tracked",
                       "I64",
                       {},
                       {reinterpret_cast<const std::uint8_t*>(&tracked[i]), sizeof(std::int64_t)}});

  const std::map<std::string, std::string> metadata = {
      {"format", "pt"},
      {"producer", "conveyor"},
      {"model", options.network.empty() ? to_string(options.model) : "custom"}};
  json files;
  files["weights"] = write_tensors(tensor_path(file, progress.steps, ".safetensors"), weights, metadata);
  files["optimizer"] = write_tensors(
      tensor_path(file, progress.steps, ".optimizer.safetensors"), momentum,
      {{"producer", "conveyor"}, {"content", "SGD momentum buffers, named after their parameters"}});
  json data = nullptr;
  if (!progress.data.empty()) data = json::parse(progress.data.to_json());
  const json body = {{"model", model_json(options)},
                     {"options", options_json(options)},
                     {"progress",
                      {{"steps", progress.steps},
                       {"epoch", progress.epoch},
                       {"step_in_epoch", progress.step_in_epoch},
                       {"learning_rate", options.learning_rate}}},
                     {"data", data},
                     {"files", files}};
  const std::string text = body.dump();
  const json document = {{"format", kFormat},
                         {"version", kVersion},
                         {"xxh64", hex(XXH64(text.data(), text.size(), 0))},
                         {"state", body}};
  write_file_atomically(file, document.dump(1) + "\n");
  for (const std::filesystem::path& old : previous) {
    bool current = false;
    for (const char* role : {"weights", "optimizer"})
      current = current || old.filename() == files[role]["name"].get<std::string>();
    std::error_code ignored;
    if (!current) std::filesystem::remove(old, ignored);
  }
}

TrainingProgress load_checkpoint(const std::filesystem::path& file, const TrainerOptions& options,
                                 ParameterStore& params) {
  const std::string where = "checkpoint '" + file.string() + "'";
  const json body = read_checkpoint_json(file);
  TrainingProgress progress;
  std::vector<std::vector<float>> host(3), velocity(2);
  try {
    const json model = model_json(options);
    if (body.at("model") != model)
      throw InvalidArgument(where + " holds another model: " + body.at("model").dump() +
                            ", this trainer has " + model.dump());
    const SafetensorsFile weights = read_tensor_file(file, body.at("files").at("weights"), "weights");
    const SafetensorsFile momentum = read_tensor_file(file, body.at("files").at("optimizer"), "optimizer");
    // Everything is read and checked into copies first: a bad checkpoint leaves the parameters as they were.
    for (int g = 0; g < 3; ++g) host[static_cast<std::size_t>(g)] = params.host(static_cast<ParamGroup>(g));
    for (int g = 0; g < 2; ++g)
      velocity[static_cast<std::size_t>(g)] = params.host_velocity(static_cast<ParamGroup>(g));
    for (const ParamEntry& e : params.layout().entries()) {
      const std::vector<float> values =
          tensor_values(weights, file.parent_path() / body["files"]["weights"]["name"].get<std::string>(), e);
      std::copy(
          values.begin(), values.end(),
          host[static_cast<std::size_t>(e.ref.group)].begin() + static_cast<std::ptrdiff_t>(e.ref.offset));
      if (e.ref.group != ParamGroup::statistics) {
        const std::vector<float> v = tensor_values(
            momentum, file.parent_path() / body["files"]["optimizer"]["name"].get<std::string>(), e);
        std::copy(v.begin(), v.end(),
                  velocity[static_cast<std::size_t>(e.ref.group)].begin() +
                      static_cast<std::ptrdiff_t>(e.ref.offset));
      }
    }
    const json& p = body.at("progress");
    progress.steps = p.at("steps").get<std::uint64_t>();
    progress.epoch = p.at("epoch").get<std::uint64_t>();
    progress.step_in_epoch = p.at("step_in_epoch").get<std::uint64_t>();
    progress.learning_rate = p.at("learning_rate").get<double>();
    if (!body.at("data").is_null())
      progress.data = IteratorState::from_json(body.at("data").dump(), where + ", its data iterator state");
  } catch (const json::exception& error) {
    throw InvalidArgument(where + ": malformed (" + error.what() + ")");
  }
  for (int g = 0; g < 3; ++g)
    params.host(static_cast<ParamGroup>(g)) = std::move(host[static_cast<std::size_t>(g)]);
  for (int g = 0; g < 2; ++g)
    params.host_velocity(static_cast<ParamGroup>(g)) = std::move(velocity[static_cast<std::size_t>(g)]);
  return progress;
}

}  // namespace conveyor::train
