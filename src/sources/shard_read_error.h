// Why a sample or a shard could not be read, with a short kind that names the reason in the skip counts
// ("truncated", "no_label", "http_404", ...). The message names the shard, the member and the byte offset.
#pragma once

#include <string>
#include <utility>

#include "conveyor/error.h"

namespace conveyor::detail {

class ShardReadError : public IoError {
 public:
  ShardReadError(std::string kind, const std::string& message) : IoError(message), kind_(std::move(kind)) {}
  const std::string& kind() const noexcept { return kind_; }

 private:
  std::string kind_;
};

}  // namespace conveyor::detail
