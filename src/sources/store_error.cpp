#include "src/sources/store_error.h"

#include <pugixml.hpp>

namespace conveyor::detail {

StoreError parse_store_error(std::string_view body) {
  pugi::xml_document document;
  if (!document.load_buffer(body.data(), body.size())) return {};
  const pugi::xml_node error = document.child("Error");
  if (!error) return {};
  return {error.child_value("Code"), error.child_value("Message")};
}

std::string describe_http_failure(long status, std::string_view body) {
  std::string out = "HTTP " + std::to_string(status);
  const StoreError error = parse_store_error(body);
  if (!error.code.empty())
    return out + " (" + error.code + (error.message.empty() ? "" : ": " + error.message) + ")";
  // Not an error document: a server's own page. Its first line, short, says more than nothing.
  std::string_view line = body.substr(0, body.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200);
  bool printable = !line.empty();
  for (const char c : line) printable = printable && static_cast<unsigned char>(c) >= 0x20;
  return printable ? out + " (" + std::string(line) + ")" : out;
}

}  // namespace conveyor::detail
