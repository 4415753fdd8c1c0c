// Who a job is: the fingerprint of what a trainer asks for, the identity of the data a chain reads, and the
// job's token. A trainer whose fingerprint differs from its job's is refused (another data set, op or seed
// must never consume someone else's batches), and so is a worker whose data differs from the job's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "conveyor/service/chain.h"
#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;

// XXH3 of the chain's name, parameters (sorted), seed and the job's geometry, as src/core/hex.h writes it
// ("0x" and 16 hex digits).
std::string fingerprint(const v1::ChainSpec& chain, const v1::JobGeometry& geometry);
// The same lines in words, for the error that refuses a mismatch.
std::string describe_job(const v1::ChainSpec& chain, const v1::JobGeometry& geometry);

// What a built chain is: its source's size, every element's path and label (hashed), the batch layout.
v1::ChainDescription describe_chain(const Chain& chain);
// "" when they describe the same data and layout, else the first difference in words.
std::string description_difference(const v1::ChainDescription& job, const v1::ChainDescription& here);

v1::ChainSpec to_wire(const ChainSpec& spec);
ChainSpec from_wire(const v1::ChainSpec& spec);

// A token kept as SHA-256(salt + token) with a random salt; checked in constant time. An empty token is no
// token: every caller is let in.
struct TokenCheck {
  std::string salt, hash;
};
TokenCheck protect_token(std::string_view token);
bool token_matches(const std::string& salt, const std::string& hash, std::string_view token);

}  // namespace conveyor::service::detail
