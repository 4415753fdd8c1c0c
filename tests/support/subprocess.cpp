#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace conveyor::testing {
namespace {

// The parent's environment with `overrides` replacing or adding variables.
std::vector<std::string> merged_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    bool replaced = false;
    for (const std::string& override_entry : overrides) replaced |= override_entry.starts_with(name + "=");
    if (!replaced) out.push_back(text);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::vector<std::string>& environment) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("ChildProcess: pipe failed");
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error("ChildProcess: pipe failed");
  }
  out_fd_ = out_pipe[0];
  err_fd_ = err_pipe[0];
  try {
    spawn(argv, environment, out_pipe[1], err_pipe[1]);
  } catch (...) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    ::close(out_fd_);
    ::close(err_fd_);
    throw;
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                           const std::filesystem::path& log) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("ChildProcess: cannot write " + log.string());
  try {
    spawn(argv, environment, fd, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void ChildProcess::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                         int out, int err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out, 1);
  posix_spawn_file_actions_adddup2(&actions, err, 2);
  std::vector<std::string> args = argv, env = merged_environment(environment);
  std::vector<char*> arg_pointers = pointers(args), env_pointers = pointers(env);
  const int status =
      ::posix_spawn(&pid_, args[0].c_str(), &actions, nullptr, arg_pointers.data(), env_pointers.data());
  posix_spawn_file_actions_destroy(&actions);
  if (status != 0)
    throw std::runtime_error("ChildProcess: cannot start " + args[0] + ": " + std::strerror(status));
}

void ChildProcess::signal(int signal) {
  if (!reaped_) ::kill(pid_, signal);
}

ChildProcess::~ChildProcess() {
  if (!reaped_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  if (err_fd_ >= 0) ::close(err_fd_);
}

ProcessResult ChildProcess::wait(std::chrono::milliseconds limit) {
  ProcessResult result;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool out_open = out_fd_ >= 0, err_open = err_fd_ >= 0;
  if (!out_open) {
    // Output goes to a file: wait for the exit itself, polling (no pipe to wait on).
    int status = 0;
    for (;;) {
      const pid_t done = ::waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (done < 0 && errno != EINTR) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        result.timed_out = true;
        ::kill(pid_, SIGKILL);
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        break;
      }
      ::usleep(5000);
    }
    reaped_ = true;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
    return result;
  }
  char buffer[4096];
  while (out_open || err_open) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(pid_, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out_open ? out_fd_ : -1, POLLIN, 0}, {err_open ? err_fd_ : -1, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
  return result;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                          std::chrono::milliseconds limit) {
  return ChildProcess(argv, environment).wait(limit);
}

std::string program_path(const char* variable, const char* built) {
  const char* moved = std::getenv(variable);
  return moved != nullptr && *moved != '\0' ? moved : built;
}

}  // namespace conveyor::testing
