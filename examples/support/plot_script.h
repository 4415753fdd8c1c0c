// Drawing a figure from what an example wrote (JSON or CSV) with one of the project's plotting scripts
// (Python and matplotlib, through bench/plot.sh, which picks a Python that has it).
//
// The scripts are looked up in the folder $CONVEYOR_PLOT_SCRIPTS names when it is set, else in the folder of
// the running program, where the build copies them: nothing depends on where the sources were.
#pragma once

#include <filesystem>
#include <string>

namespace example_support {

// Where plot.sh and the plotting scripts are looked up (see above).
std::filesystem::path scripts_folder();

// A sentence for a program's --help: where `script` is looked up.
std::string help_text(const std::string& script);

// Runs `plot.sh SCRIPT INPUT OUTPUT` from scripts_folder() and waits for it. Throws conveyor::Error
// naming the script and what went wrong (not found, could not start, non-zero exit).
void plot(const std::string& script, const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace example_support
