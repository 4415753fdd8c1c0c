// Environment variables set (or unset) for a test's lifetime, the old values put back when it ends.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace conveyor::testing {

class ScopedEnvironment {
 public:
  // Each variable set to its value, or unset where the value is nullopt.
  explicit ScopedEnvironment(
      const std::vector<std::pair<std::string, std::optional<std::string>>>& variables);
  explicit ScopedEnvironment(const std::vector<std::pair<std::string, std::string>>& variables);
  ~ScopedEnvironment();
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace conveyor::testing
