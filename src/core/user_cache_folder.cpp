#include "src/core/user_cache_folder.h"

#include <cctype>
#include <string>

namespace conveyor::detail {

std::optional<std::filesystem::path> user_cache_folder(const std::filesystem::path& option,
                                                       const char* conveyor_env, const char* xdg_env,
                                                       const char* home_env) {
  if (!option.empty()) return option;
  if (conveyor_env && *conveyor_env) {
    if (std::string(conveyor_env) == "off") return std::nullopt;
    return std::filesystem::path(conveyor_env);
  }
  if (xdg_env && *xdg_env && std::filesystem::path(xdg_env).is_absolute())
    return std::filesystem::path(xdg_env) / "conveyor";
  if (home_env && *home_env) return std::filesystem::path(home_env) / ".cache" / "conveyor";
  return std::nullopt;
}

std::string cache_file_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
  return out;
}

}  // namespace conveyor::detail
