// ChainRegistry and the standard chain (conveyor/service/chain.h).
#include <charconv>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "conveyor/error.h"
#include "conveyor/ops.h"
#include "conveyor/service/chain.h"
#include "conveyor/shards.h"

namespace conveyor::service {
namespace {

// A parameter's text, or `fallback` when absent.
std::string text_of(const ChainParameters& p, const std::string& key, const std::string& fallback) {
  const auto it = p.find(key);
  return it == p.end() ? fallback : it->second;
}

template <class T>
T number_of(const ChainParameters& p, const std::string& key, T fallback) {
  const auto it = p.find(key);
  if (it == p.end()) return fallback;
  T value{};
  const std::string& text = it->second;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{} || end != text.data() + text.size())
    throw InvalidArgument("standard chain: parameter " + key + "='" + text + "' is not a number");
  return value;
}

// "0.4,0.4,0.4" (brightness, contrast, saturation), or "0" for none.
ops::DistortOptions distort_of(const std::string& text) {
  if (text == "0" || text.empty()) return {};
  std::vector<double> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    double value = 0;
    const auto [end, error] = std::from_chars(text.data() + start, text.data() + comma, value);
    if (error != std::errc{} || end != text.data() + comma || value < 0)
      throw InvalidArgument("standard chain: distort='" + text + "' is not brightness,contrast,saturation");
    values.push_back(value);
    start = comma + 1;
  }
  if (values.size() != 3)
    throw InvalidArgument("standard chain: distort='" + text + "' is not brightness,contrast,saturation");
  return {.brightness = values[0], .contrast = values[1], .saturation = values[2]};
}

// The data as pipeline_throughput opens it. Tar shards are read at random: a split is any range of the
// shuffled order, and a stream read front to back has no such ranges.
Dataset data_of(const ChainParameters& p, const std::string& format) {
  const std::string data = text_of(p, "data", "");
  if (data.empty()) throw InvalidArgument("standard chain: parameter data is required");
  if (format == "segmentation") return Dataset::segmentation_folder(data);
  if (format == "detection") {
    const std::string images = text_of(p, "images", "");
    return Dataset::coco_detection(data, images.empty()
                                             ? std::filesystem::absolute(data).parent_path() / "images"
                                             : std::filesystem::path(images));
  }
  if (format != "classification")
    throw InvalidArgument("standard chain: format='" + format +
                          "' (classification, segmentation or detection)");
  if (data.starts_with("http://") || data.starts_with("https://"))
    throw InvalidArgument(
        "standard chain: data='" + data +
        "': shards over HTTP are streamed, and a worker's split is a range of the shuffled order, "
        "which needs random access: copy the shards to the workers' disks");
  if (std::filesystem::is_directory(data)) return Dataset::image_folder(data);
  TarShardOptions shards;
  shards.random_access = true;
  if (data.ends_with(".json")) return Dataset::tar_shard_index(data, shards);
  if (data.find_first_of("{*?[") != std::string::npos || data.ends_with(".tar"))
    return Dataset::tar_shards(expand_shard_pattern(data), shards);
  return Dataset::list_file(data);
}

const std::set<std::string>& standard_parameters() {
  static const std::set<std::string> names{"data", "format", "images", "size", "flip", "distort", "on_error"};
  return names;
}

}  // namespace

Chain standard_chain(const ChainParameters& p) {
  for (const auto& [key, value] : p)
    if (!standard_parameters().contains(key))
      throw InvalidArgument("standard chain: unknown parameter '" + key +
                            "' (data, format, images, size, flip, distort, on_error)");
  const std::string format = text_of(p, "format", "classification");
  Dataset samples = data_of(p, format);
  const int size = number_of<int>(p, "size", 224);
  if (size < 1 || size > 4096) throw InvalidArgument("standard chain: size must be 1-4096");
  samples = samples.map(ops::decode_random_resized_crop(size));
  const double flip = number_of<double>(p, "flip", 0.5);
  if (!(flip >= 0 && flip <= 1)) throw InvalidArgument("standard chain: flip must be a probability");
  if (flip > 0) samples = samples.map(ops::flip_horizontal(flip));
  const ops::DistortOptions distort = distort_of(text_of(p, "distort", "0.4,0.4,0.4"));
  if (distort.brightness > 0 || distort.contrast > 0 || distort.saturation > 0)
    samples = samples.map(ops::distort(distort));
  const std::string on_error = text_of(p, "on_error", "fail");
  if (on_error != "fail" && on_error != "skip")
    throw InvalidArgument("standard chain: on_error is fail or skip");
  samples = samples.with_options({.on_error = on_error == "skip" ? OnError::skip : OnError::fail});
  return Chain{std::move(samples), BatchOptions{.sample_shape = ImageShape{size, size, 3}}};
}

ChainRegistry::ChainRegistry() { builders_.emplace("standard", &standard_chain); }

ChainRegistry& ChainRegistry::add(std::string name, ChainBuilder builder) {
  if (name.empty()) throw InvalidArgument("ChainRegistry::add: a chain needs a name");
  if (!builder) throw InvalidArgument("ChainRegistry::add: chain '" + name + "' has no builder");
  if (!builders_.emplace(name, std::move(builder)).second)
    throw InvalidArgument("ChainRegistry::add: a chain named '" + name + "' is registered already");
  return *this;
}

bool ChainRegistry::contains(const std::string& name) const { return builders_.contains(name); }

std::vector<std::string> ChainRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, builder] : builders_) out.push_back(name);
  return out;
}

Chain ChainRegistry::build(const ChainSpec& spec) const {
  const auto it = builders_.find(spec.name);
  if (it == builders_.end()) {
    std::string known;
    for (const auto& [name, builder] : builders_) known += (known.empty() ? "" : ", ") + name;
    throw InvalidArgument("no chain named '" + spec.name + "' is registered here (" + known + ")");
  }
  Chain chain = it->second(spec.parameters);
  if (!chain.batching.sample_shape || chain.batching.sample_shape->empty())
    throw InvalidArgument("chain '" + spec.name + "': its BatchOptions need a sample_shape");
  return chain;
}

}  // namespace conveyor::service
