#include "src/sources/fields_json.h"

#include <nlohmann/json.hpp>
#include <string>

#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

[[noreturn]] void bad(const std::string& why) { throw ShardReadError("bad_fields", why); }

const nlohmann::json* member(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) return nullptr;
  if (!it->is_array()) bad(std::string("\"") + name + "\" is not a list");
  return &*it;
}

std::int64_t integer(const nlohmann::json& value, const char* what) {
  if (!value.is_number_integer()) bad(std::string("a ") + what + " that is not an integer: " + value.dump());
  return value.get<std::int64_t>();
}

}  // namespace

void parse_fields_json(std::span<const std::uint8_t> text, Sample& sample) {
  const nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) bad("not JSON");
  if (!json.is_object()) bad("not a JSON object");
  const nlohmann::json* boxes = member(json, "boxes");
  const nlohmann::json* classes = member(json, "classes");
  const nlohmann::json* crowd = member(json, "crowd");
  const std::size_t n = boxes ? boxes->size() : 0;
  if ((classes ? classes->size() : 0) != n)
    bad(std::to_string(n) + " boxes but " + std::to_string(classes ? classes->size() : 0) + " classes");
  if (crowd && crowd->size() != n) bad(std::to_string(n) + " boxes but " + std::to_string(crowd->size()) + " crowd flags");
  sample.boxes.reserve(sample.boxes.size() + n);
  for (std::size_t i = 0; i < n; ++i) {
    const nlohmann::json& box = (*boxes)[i];
    if (!box.is_array() || box.size() != 4) bad("box " + std::to_string(i) + " is not [x0, y0, x1, y1]: " + box.dump());
    float corners[4];
    for (std::size_t k = 0; k < 4; ++k) {
      if (!box[k].is_number()) bad("box " + std::to_string(i) + " has a corner that is not a number: " + box.dump());
      corners[k] = box[k].get<float>();
    }
    sample.boxes.add({corners[0], corners[1], corners[2], corners[3]}, integer((*classes)[i], "class"),
                     crowd && integer((*crowd)[i], "crowd flag") != 0);
  }
  if (const nlohmann::json* tags = member(json, "tags"))
    for (const nlohmann::json& tag : *tags) sample.tags.push_back(integer(tag, "tag"));
}

}  // namespace conveyor::detail
