// How the data service says no: one exception type with a kind, raised at the API edge (from_service,
// BatchIterator::next, run_worker, the status query) with what was refused and why.
#pragma once

#include <cstdint>
#include <string>

#include "conveyor/error.h"

namespace conveyor::service {

class ServiceError : public Error {
 public:
  enum class Kind : std::uint8_t {
    unavailable,   // nobody answered at the address (not started, gone, or unreachable); retried where it
                   // helps
    unauthorized,  // the job's token was missing or wrong
    refused,    // a mismatch: another fingerprint, protocol version, consumer count, or data than the job's
    not_found,  // no such job (or worker) at the dispatcher
    malformed,  // a message that does not parse, or breaks the protocol's rules
    too_large,  // a message over the receiver's limit
    failed,     // anything else the other side reported
  };
  ServiceError(Kind kind, const std::string& what) : Error(what), kind_(kind) {}
  Kind kind() const noexcept { return kind_; }

 private:
  Kind kind_;
};

const char* to_string(ServiceError::Kind kind) noexcept;

}  // namespace conveyor::service
