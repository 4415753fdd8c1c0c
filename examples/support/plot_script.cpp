#include "plot_script.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "conveyor/error.h"

extern char** environ;  // NOLINT: POSIX's name for this process's environment, passed on to the script

namespace example_support {

std::filesystem::path scripts_folder() {
  if (const char* folder = std::getenv("CONVEYOR_PLOT_SCRIPTS"); folder != nullptr && *folder != '\0')
    return folder;
  std::error_code error;
  const std::filesystem::path program = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) throw conveyor::Error("cannot find this program's folder (/proc/self/exe): " + error.message());
  return program.parent_path();
}

std::string help_text(const std::string& script) {
  return "(drawn by plot.sh and " + script +
         ", Python with matplotlib, taken from the folder $CONVEYOR_PLOT_SCRIPTS names, else from this "
         "program's folder, where the build copies them)";
}

void plot(const std::string& script, const std::filesystem::path& input,
          const std::filesystem::path& output) {
  const std::filesystem::path folder = scripts_folder();
  const std::string runner = (folder / "plot.sh").string(), path = (folder / script).string();
  for (const std::string& needed : {runner, path})
    if (!std::filesystem::exists(needed))
      throw conveyor::Error("plotting: no " + needed +
                            " (set CONVEYOR_PLOT_SCRIPTS to the folder of plot.sh and " + script +
                            ": bench/ in the sources)");
  // Run directly, not through a shell, so no path needs quoting.
  std::string input_text = input.string(), output_text = output.string();
  std::vector<char*> argv = {const_cast<char*>(runner.c_str()), const_cast<char*>(path.c_str()),
                             input_text.data(), output_text.data(), nullptr};
  pid_t child = 0;
  if (const int failed = posix_spawn(&child, runner.c_str(), nullptr, nullptr, argv.data(), environ))
    throw conveyor::Error("plotting: cannot start " + runner + ": " + std::strerror(failed));
  int status = 0;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR)
      throw conveyor::Error("plotting: waiting for " + runner + ": " + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw conveyor::Error("plotting failed: " + runner + " " + path + " " + input_text + " " + output_text +
                          (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                             : " was killed by signal " + std::to_string(WTERMSIG(status))));
}

}  // namespace example_support
