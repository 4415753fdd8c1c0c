#include "src/sources/streamed_fields.h"

#include <utility>

#include "src/sources/fields_json.h"
#include "src/sources/shard_read_error.h"

namespace conveyor::detail {

void take_streamed_fields(StreamedSample& streamed, Sample& sample,
                          std::vector<std::uint8_t>& json) noexcept {
  std::swap(sample.encoded_mask, streamed.mask_bytes);
  std::swap(json, streamed.fields_json);
}

void read_streamed_fields(const FieldSet& fields, const std::vector<std::uint8_t>& json, Sample& sample) {
  if (!fields.boxes) return;
  try {
    parse_fields_json(json, sample);
  } catch (const ShardReadError& error) {
    throw ShardReadError(error.kind(), "'" + sample.path + "': its boxes: " + error.what());
  }
}

}  // namespace conveyor::detail
