// The --device option of the examples: a CLI11 check that accepts what conveyor::DeviceSpec::parse
// accepts (auto, cpu, gpu, gpu:N), so a bad value is a usage error with DeviceSpec's own reason.
#pragma once

#include <CLI/CLI.hpp>
#include <exception>
#include <string>

#include "conveyor/cuda/device.h"

namespace example_support {

inline CLI::Validator device_spec() {
  return CLI::Validator(
      [](const std::string& text) {
        try {
          conveyor::DeviceSpec::parse(text);
          return std::string();
        } catch (const std::exception& error) {
          return std::string(error.what());
        }
      },
      "auto|cpu|gpu|gpu:N");
}

}  // namespace example_support
