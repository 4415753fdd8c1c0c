#include "src/service/transport/grpc_common.h"

#include <fstream>
#include <sstream>

#include "conveyor/error.h"

namespace conveyor::service::detail {
namespace {

std::string read_pem(const std::filesystem::path& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("TLS: cannot read the " + std::string(what) + " '" + path.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const Tls& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  if (!tls.ca.empty()) options.pem_root_certs = read_pem(tls.ca, "CA certificate");
  if (!tls.certificate.empty()) {
    options.pem_cert_chain = read_pem(tls.certificate, "certificate");
    options.pem_private_key = read_pem(tls.key, "private key");
  }
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const Tls& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  if (tls.certificate.empty() || tls.key.empty())
    throw InvalidArgument("TLS: a server needs its certificate and private key");
  // With a CA, clients must show a certificate it signed (mutual TLS): a cluster's own CA keeps strangers
  // out.
  grpc::SslServerCredentialsOptions options(tls.ca.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!tls.ca.empty()) options.pem_root_certs = read_pem(tls.ca, "CA certificate");
  options.pem_key_cert_pairs.push_back(
      {read_pem(tls.key, "private key"), read_pem(tls.certificate, "certificate")});
  return grpc::SslServerCredentials(options);
}

// gRPC shuts its library down when its last object goes, and that waits for its executor threads, which sleep
// up to 10 s between polls: a trainer's iterator, a worker or a dispatcher destroyed last took that long to
// go (seen in this project's tests). One reference taken once and never given back keeps the library up for
// the process's life instead; the process's exit ends it.
void keep_grpc_up() {
  static const bool up = [] {
    grpc_init();
    return true;
  }();
  (void)up;
}

}  // namespace

std::shared_ptr<grpc::Channel> make_channel(const std::string& address, const LinkOptions& options,
                                            std::size_t max_receive) {
  keep_grpc_up();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, static_cast<int>(options.keepalive.count()));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  // Reconnect soon after a dispatcher restart, not after gRPC's default backoff of up to two minutes.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  if (max_receive > 0)
    args.SetMaxReceiveMessageSize(static_cast<int>(std::min<std::size_t>(max_receive, INT32_MAX)));
  return grpc::CreateCustomChannel(address, channel_credentials(options.tls), args);
}

void configure_server(grpc::ServerBuilder& builder, const std::string& listen, const Tls& tls, int* port,
                      std::size_t max_receive) {
  keep_grpc_up();
  builder.AddListeningPort(listen, server_credentials(tls), port);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 500);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, 0);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_receive));
}

grpc::StatusCode status_code(ServiceError::Kind kind) noexcept {
  switch (kind) {
    case ServiceError::Kind::unavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case ServiceError::Kind::unauthorized:
      return grpc::StatusCode::UNAUTHENTICATED;
    case ServiceError::Kind::refused:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ServiceError::Kind::not_found:
      return grpc::StatusCode::NOT_FOUND;
    case ServiceError::Kind::malformed:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ServiceError::Kind::too_large:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ServiceError::Kind::failed:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

ServiceError error_of(const grpc::Status& status, const std::string& what) {
  using Kind = ServiceError::Kind;
  Kind kind = Kind::failed;
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      kind = Kind::unavailable;
      break;
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
      kind = Kind::unauthorized;
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      kind = Kind::refused;
      break;
    case grpc::StatusCode::NOT_FOUND:
      kind = Kind::not_found;
      break;
    case grpc::StatusCode::INVALID_ARGUMENT:
      kind = Kind::malformed;
      break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      kind = Kind::too_large;
      break;
    default:
      break;
  }
  return ServiceError(kind, what + ": " + status.error_message());
}

grpc::Status status_of_current_exception() {
  try {
    throw;
  } catch (const ServiceError& error) {
    return {status_code(error.kind()), error.what()};
  } catch (const InvalidArgument& error) {
    return {grpc::StatusCode::INVALID_ARGUMENT, error.what()};
  } catch (const std::exception& error) {
    return {grpc::StatusCode::INTERNAL, error.what()};
  } catch (...) {
    return {grpc::StatusCode::INTERNAL, "an unknown exception"};
  }
}

}  // namespace conveyor::service::detail
