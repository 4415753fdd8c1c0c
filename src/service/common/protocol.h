// The protocol's version and the limits both ends enforce, in one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace conveyor::service::detail {

// Bumped whenever a message of src/service/wire/conveyor_service_v1.proto changes meaning. Every request
// carries it (Caller::protocol, StreamOpen's caller); a receiver with another refuses the request, saying
// both.
inline constexpr std::uint32_t kProtocolVersion = 1;

// The data plane's method, served as raw frames (src/service/transport/data_plane.h).
inline constexpr const char* kSplitsMethod = "/conveyor.service.v1.Worker/Splits";

// Control messages are small: anything larger is refused by the receiving end (gRPC's RESOURCE_EXHAUSTED),
// before it is parsed.
inline constexpr std::size_t kMaxControlMessageBytes = std::size_t{4} << 20;
// A client's message on the data plane (a stream's opening or one split's request).
inline constexpr std::size_t kMaxClientFrameBytes = std::size_t{64} << 10;

// "protocol N (conveyor V)": how a version is named in errors.
std::string describe_protocol(std::uint32_t protocol, const std::string& version);

}  // namespace conveyor::service::detail
