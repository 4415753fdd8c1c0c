#include "src/sources/fields_json.h"

#include <nlohmann/json.hpp>
#include <string>

#include "src/sources/shard_read_error.h"

namespace conveyor::detail {
namespace {

[[noreturn]] void bad_fields(const std::string& why) { throw ShardReadError("bad_fields", why); }

const nlohmann::json* list_member(const nlohmann::json& object, const char* name) {
  const auto it = object.find(name);
  if (it == object.end()) return nullptr;
  if (!it->is_array()) bad_fields(std::string("\"") + name + "\" is not a list");
  return &*it;
}

std::int64_t json_integer(const nlohmann::json& value, const char* what) {
  if (!value.is_number_integer())
    bad_fields(std::string("a ") + what + " that is not an integer: " + value.dump());
  return value.get<std::int64_t>();
}

}  // namespace

void parse_fields_json(std::span<const std::uint8_t> text, Sample& sample) {
  const nlohmann::json json =
      nlohmann::json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) bad_fields("not JSON");
  if (!json.is_object()) bad_fields("not a JSON object");
  const nlohmann::json* boxes = list_member(json, "boxes");
  const nlohmann::json* classes = list_member(json, "classes");
  const nlohmann::json* crowd = list_member(json, "crowd");
  const std::size_t n = boxes ? boxes->size() : 0;
  if ((classes ? classes->size() : 0) != n)
    bad_fields(std::to_string(n) + " boxes but " + std::to_string(classes ? classes->size() : 0) +
               " classes");
  if (crowd && crowd->size() != n)
    bad_fields(std::to_string(n) + " boxes but " + std::to_string(crowd->size()) + " crowd flags");
  sample.boxes.reserve(sample.boxes.size() + n);
  for (std::size_t i = 0; i < n; ++i) {
    const nlohmann::json& box = (*boxes)[i];
    if (!box.is_array() || box.size() != 4)
      bad_fields("box " + std::to_string(i) + " is not [x0, y0, x1, y1]: " + box.dump());
    float corners[4];
    for (std::size_t k = 0; k < 4; ++k) {
      if (!box[k].is_number())
        bad_fields("box " + std::to_string(i) + " has a corner that is not a number: " + box.dump());
      corners[k] = box[k].get<float>();
    }
    sample.boxes.add({corners[0], corners[1], corners[2], corners[3]}, json_integer((*classes)[i], "class"),
                     crowd && json_integer((*crowd)[i], "crowd flag") != 0);
  }
  if (const nlohmann::json* tags = list_member(json, "tags"))
    for (const nlohmann::json& tag : *tags) sample.tags.push_back(json_integer(tag, "tag"));
}

}  // namespace conveyor::detail
