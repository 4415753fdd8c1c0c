#include "src/train/safetensors.h"

#include <algorithm>
#include <bit>
#include <fstream>
#include <nlohmann/json.hpp>

#include "conveyor/error.h"

namespace conveyor::train {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian bytes");

std::uint64_t element_count(const std::vector<std::int64_t>& shape) {
  std::uint64_t n = 1;
  for (const std::int64_t d : shape) {
    if (d < 0) throw InvalidArgument("negative dimension");
    n *= static_cast<std::uint64_t>(d);
  }
  return n;
}

}  // namespace

std::size_t safetensors_dtype_size(const std::string& dtype) noexcept {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  return 0;
}

void write_safetensors(AtomicFile& out, std::span<const SafetensorsEntry> tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const SafetensorsEntry& t : tensors) {
    const std::uint64_t expected = element_count(t.shape) * safetensors_dtype_size(t.dtype);
    if (safetensors_dtype_size(t.dtype) == 0 || expected != t.bytes.size())
      throw InvalidArgument("safetensors: tensor '" + t.name + "' has " + std::to_string(t.bytes.size()) +
                            " bytes for dtype " + t.dtype + " and its shape");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + expected}}};
    offset += expected;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::uint64_t size = text.size();
  out.write(&size, sizeof size);
  out.write(text);
  for (const SafetensorsEntry& t : tensors) out.write(t.bytes.data(), t.bytes.size());
}

SafetensorsFile SafetensorsFile::read(const std::filesystem::path& path) {
  SafetensorsFile file;
  file.path_ = path;
  const std::string where = "safetensors file '" + path.string() + "'";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read " + where);
  file.contents_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError("reading " + where + " failed");
  const std::vector<std::uint8_t>& bytes = file.contents_;
  std::uint64_t header_size = 0;
  if (bytes.size() < sizeof header_size)
    throw InvalidArgument(where + " is truncated: " + std::to_string(bytes.size()) +
                          " bytes, no header size");
  std::copy_n(bytes.begin(), sizeof header_size, reinterpret_cast<std::uint8_t*>(&header_size));
  if (header_size > bytes.size() - sizeof header_size)
    throw InvalidArgument(where + " is truncated: its header says " + std::to_string(header_size) +
                          " bytes of JSON, the file has " + std::to_string(bytes.size()) + " in all");
  const auto* data = bytes.data() + sizeof header_size + header_size;
  const std::uint64_t data_size = bytes.size() - sizeof header_size - header_size;
  json header;
  try {
    header = json::parse(bytes.begin() + sizeof header_size,
                         bytes.begin() + static_cast<std::ptrdiff_t>(sizeof header_size + header_size));
  } catch (const json::exception& error) {
    throw InvalidArgument(where + ": its header is not JSON (" + error.what() + ")");
  }
  try {
    // Offsets sorted, to check that the tensors cover the data without holes or overlaps.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (const auto& [name, value] : header.items()) {
      if (name == "__metadata__") {
        file.metadata_ = value.get<std::map<std::string, std::string>>();
        continue;
      }
      Tensor t;
      t.dtype = value.at("dtype").get<std::string>();
      t.shape = value.at("shape").get<std::vector<std::int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<std::uint64_t>>();
      if (safetensors_dtype_size(t.dtype) == 0)
        throw InvalidArgument("tensor '" + name + "' has unknown dtype " + t.dtype);
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size)
        throw InvalidArgument("tensor '" + name + "' lies outside the " + std::to_string(data_size) +
                              " bytes of data (truncated file?)");
      if (offsets[1] - offsets[0] != element_count(t.shape) * safetensors_dtype_size(t.dtype))
        throw InvalidArgument("tensor '" + name + "' has " + std::to_string(offsets[1] - offsets[0]) +
                              " bytes, its dtype and shape need " +
                              std::to_string(element_count(t.shape) * safetensors_dtype_size(t.dtype)));
      t.bytes = std::span<const std::uint8_t>(data + offsets[0], offsets[1] - offsets[0]);
      ranges.emplace_back(offsets[0], offsets[1]);
      file.tensors_.emplace(name, std::move(t));
    }
    std::sort(ranges.begin(), ranges.end());
    std::uint64_t end = 0;
    for (const auto& [begin, stop] : ranges) {
      if (begin != end)
        throw InvalidArgument("its tensors leave a gap or overlap at byte " + std::to_string(begin));
      end = stop;
    }
    if (end != data_size)
      throw InvalidArgument(std::to_string(data_size - end) + " bytes after the last tensor");
  } catch (const InvalidArgument& error) {
    throw InvalidArgument(where + ": " + error.what());
  } catch (const json::exception& error) {
    throw InvalidArgument(where + ": malformed header (" + error.what() + ")");
  }
  return file;
}

const SafetensorsFile::Tensor& SafetensorsFile::at(const std::string& name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end())
    throw InvalidArgument("safetensors file '" + path_.string() + "' has no tensor '" + name + "'");
  return it->second;
}

}  // namespace conveyor::train
