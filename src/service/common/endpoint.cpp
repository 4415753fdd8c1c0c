// Addresses, TLS files and the error kinds' names (conveyor/service/endpoint.h, service_error.h).
#include "conveyor/service/endpoint.h"

#include "conveyor/error.h"
#include "conveyor/service/service_error.h"

namespace conveyor::service {

Tls Tls::from_folder(const std::filesystem::path& folder) {
  Tls tls{folder / "ca.pem", folder / "cert.pem", folder / "key.pem"};
  for (const auto& file : {tls.ca, tls.certificate, tls.key})
    if (!std::filesystem::is_regular_file(file))
      throw IoError("TLS folder '" + folder.string() + "' has no " + file.filename().string() +
                    " (it needs ca.pem, cert.pem and key.pem)");
  return tls;
}

std::string parse_address(const std::string& url) {
  std::string address = url.starts_with("grpc://") ? url.substr(7) : url;
  while (!address.empty() && address.back() == '/') address.pop_back();
  const std::size_t colon = address.rfind(':');
  const bool bracketed = !address.empty() && address.front() == '[';
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size() ||
      (bracketed && address[colon - 1] != ']') || address.find_first_of("/ \t") != std::string::npos)
    throw InvalidArgument("service address '" + url + "': expected grpc://HOST:PORT");
  for (std::size_t i = colon + 1; i < address.size(); ++i)
    if (address[i] < '0' || address[i] > '9')
      throw InvalidArgument("service address '" + url + "': the port is not a number");
  return address;
}

const char* to_string(ServiceError::Kind kind) noexcept {
  switch (kind) {
    case ServiceError::Kind::unavailable:
      return "unavailable";
    case ServiceError::Kind::unauthorized:
      return "unauthorized";
    case ServiceError::Kind::refused:
      return "refused";
    case ServiceError::Kind::not_found:
      return "not found";
    case ServiceError::Kind::malformed:
      return "malformed";
    case ServiceError::Kind::too_large:
      return "too large";
    case ServiceError::Kind::failed:
      return "failed";
  }
  return "?";
}

}  // namespace conveyor::service
