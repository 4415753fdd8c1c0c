#include "src/train/checkpoint.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "conveyor/error.h"

namespace conveyor::train {
namespace {

constexpr const char* kMagic = "conveyor checkpoint 1";

std::vector<std::string> header_lines(const NetworkSpec& spec, const ParameterLayout& layout) {
  std::vector<std::string> lines{kMagic};
  std::ostringstream model;
  model << "model " << to_string(spec.kind) << " classes " << spec.classes << " input " << spec.input.height << "x"
        << spec.input.width << "x" << spec.input.channels;
  if (spec.kind == ModelKind::small_resnet) model << " width " << spec.width << " blocks " << spec.blocks_per_stage;
  lines.push_back(model.str());
  static const char* group_names[] = {"weights", "vectors", "statistics"};
  for (const ParamEntry& e : layout.entries())
    lines.push_back("tensor " + e.name + " " + group_names[static_cast<int>(e.ref.group)] + " " +
                    std::to_string(e.ref.offset) + " " + std::to_string(e.ref.count));
  lines.push_back("end");
  return lines;
}

std::vector<std::vector<float>*> arrays(ParameterStore& params) {
  return {&params.host(ParamGroup::weights), &params.host(ParamGroup::vectors), &params.host(ParamGroup::statistics),
          &params.host_velocity(ParamGroup::weights), &params.host_velocity(ParamGroup::vectors)};
}

}  // namespace

void save_checkpoint(const std::filesystem::path& path, const NetworkSpec& spec, ParameterStore& params) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError("cannot write checkpoint '" + path.string() + "'");
  for (const std::string& line : header_lines(spec, params.layout())) out << line << '\n';
  for (const std::vector<float>* a : arrays(params)) {
    const std::uint64_t count = a->size();
    out.write(reinterpret_cast<const char*>(&count), sizeof count);
    out.write(reinterpret_cast<const char*>(a->data()), static_cast<std::streamsize>(count * sizeof(float)));
  }
  out.flush();
  if (!out) throw IoError("writing checkpoint '" + path.string() + "' failed");
}

void load_checkpoint(const std::filesystem::path& path, const NetworkSpec& spec, ParameterStore& params) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read checkpoint '" + path.string() + "'");
  const std::vector<std::string> expected = header_lines(spec, params.layout());
  std::string line;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!std::getline(in, line)) throw IoError("checkpoint '" + path.string() + "' ends inside its header");
    if (line != expected[i])
      throw InvalidArgument("checkpoint '" + path.string() + "' holds another model: line " + std::to_string(i + 1) +
                            " is '" + line.substr(0, 120) + "', this model has '" + expected[i] + "'");
  }
  // Read everything before touching the parameters, so a truncated file leaves them as they were.
  std::vector<std::vector<float>> loaded;
  for (const std::vector<float>* a : arrays(params)) {
    std::uint64_t count = 0;
    in.read(reinterpret_cast<char*>(&count), sizeof count);
    if (!in || count != a->size())
      throw IoError("checkpoint '" + path.string() + "' is truncated or its arrays do not match its header");
    std::vector<float>& values = loaded.emplace_back(count);
    in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(count * sizeof(float)));
    if (!in) throw IoError("checkpoint '" + path.string() + "' is truncated");
  }
  const auto targets = arrays(params);
  for (std::size_t i = 0; i < targets.size(); ++i) *targets[i] = std::move(loaded[i]);
}

}  // namespace conveyor::train
