// What the gRPC transport files share: credentials from certificate files, channel and server arguments, and
// the mapping between gRPC's statuses and ServiceError. Included by grpc_*.cpp only: nothing else of the
// library sees gRPC.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <exception>
#include <memory>
#include <string>

#include "conveyor/service/service_error.h"
#include "src/service/transport/links.h"

namespace conveyor::service::detail {

// A channel to `address`: TLS when asked, keepalive pings, its own connection (not shared with other
// channels of the process, so that each worker's stream has a TCP connection to itself), messages received up
// to `max_receive` bytes (0: gRPC's default).
std::shared_ptr<grpc::Channel> make_channel(const std::string& address, const LinkOptions& options,
                                            std::size_t max_receive);
// Adds `listen` to `builder` with credentials from `tls`, keepalive pings allowed, and the receive limit.
void configure_server(grpc::ServerBuilder& builder, const std::string& listen, const Tls& tls, int* port,
                      std::size_t max_receive);

grpc::StatusCode status_code(ServiceError::Kind kind) noexcept;
// A failed call's status as the error the caller sees, `what` naming the call.
ServiceError error_of(const grpc::Status& status, const std::string& what);
// The status to answer with for the exception being handled (ServiceError, InvalidArgument, anything else).
grpc::Status status_of_current_exception();

}  // namespace conveyor::service::detail
