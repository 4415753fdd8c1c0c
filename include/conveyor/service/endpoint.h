// Where a service part listens or connects, and how it proves who it is: addresses and TLS, for the
// dispatcher, the workers and the trainers alike.
#pragma once

#include <filesystem>
#include <string>

namespace conveyor::service {

// TLS from certificate files (PEM), through gRPC's SSL credentials. Empty: plaintext. A server presents
// certificate + key; a client checks the server's against ca (and presents its own certificate + key when
// set, for servers that ask for it). The programs take one flag, --tls DIR: DIR/ca.pem, DIR/cert.pem,
// DIR/key.pem (Tls::from_folder).
struct Tls {
  std::filesystem::path ca;
  std::filesystem::path certificate;
  std::filesystem::path key;

  bool enabled() const noexcept { return !ca.empty() || !certificate.empty(); }
  static Tls from_folder(const std::filesystem::path& folder);
};

// "grpc://host:port", "host:port" or "[v6]:port" as "host:port" (gRPC's form); InvalidArgument otherwise.
std::string parse_address(const std::string& url);

}  // namespace conveyor::service
