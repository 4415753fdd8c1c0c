#include "support/scoped_environment.h"

#include <cstdlib>

namespace conveyor::testing {
namespace {

void put(const std::string& name, const std::optional<std::string>& value) {
  if (value)
    ::setenv(name.c_str(), value->c_str(), 1);
  else
    ::unsetenv(name.c_str());
}

}  // namespace

ScopedEnvironment::ScopedEnvironment(
    const std::vector<std::pair<std::string, std::optional<std::string>>>& variables) {
  for (const auto& [name, value] : variables) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    put(name, value);
  }
}

ScopedEnvironment::ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables)
    : ScopedEnvironment(std::vector<std::pair<std::string, std::optional<std::string>>>(variables.begin(),
                                                                                        variables.end())) {}

ScopedEnvironment::~ScopedEnvironment() {
  // Backwards: a variable named twice gets the value it had before the first.
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) put(it->first, it->second);
}

}  // namespace conveyor::testing
