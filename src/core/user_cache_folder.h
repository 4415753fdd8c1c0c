// Where conveyor keeps what one run learns for the next on the same machine (cuDNN's convolution choices,
// the hybrid decode split): one folder, found the same way by every wing.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace conveyor::detail {

// `option` when given; else $CONVEYOR_ALGORITHM_CACHE ("off": nowhere, nullopt); else
// $XDG_CACHE_HOME/conveyor (an absolute XDG_CACHE_HOME only, as the XDG specification asks); else
// $HOME/.cache/conveyor; nullopt when there is no home either. The environment's values are passed in (null
// when unset).
std::optional<std::filesystem::path> user_cache_folder(const std::filesystem::path& option,
                                                       const char* conveyor_env, const char* xdg_env,
                                                       const char* home_env);

// A part of a file name in that folder from any text (a GPU's name, a driver version): letters, digits,
// '.' and '-' kept, everything else '_'.
std::string cache_file_safe(std::string_view text);

}  // namespace conveyor::detail
