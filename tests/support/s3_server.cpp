#include "support/s3_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "support/subprocess.h"

extern char** environ;

namespace conveyor::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kSource = CONVEYOR_S3SERVER_SOURCE;  // tests/support/s3server
const fs::path kPrefix = CONVEYOR_S3SERVER_PREFIX;  // <build>/tests/s3server

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

bool on_path(const std::string& program) {
  return run_process({"/bin/sh", "-c", "command -v " + program}, {}, std::chrono::seconds(10)).exit_code == 0;
}

// Installs the pinned server into the build folder once per lock file's content: other test processes wait
// on the lock meanwhile. A failure is remembered for a while, so that the tests after it skip at once
// instead of each waiting for the registry again.
std::optional<std::string> install() {
  if (!on_path("node") || !on_path("npm"))
    return "node or npm is not installed (./conveyor.sh deps installs them)";
  std::error_code error;
  fs::create_directories(kPrefix, error);
  const int lock = ::open((kPrefix / ".install.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) return "cannot lock " + (kPrefix / ".install.lock").string();
  struct Unlock {
    int fd;
    ~Unlock() { ::close(fd); }
  } unlock{lock};
  const std::string wanted = read_text(kSource / "package-lock.json");
  for (const char* file : {"package.json", "serve.js"})
    fs::copy_file(kSource / file, kPrefix / file, fs::copy_options::overwrite_existing, error);
  const fs::path installed = kPrefix / "installed-lock.json", failed = kPrefix / "install-failed.txt";
  if (fs::exists(installed) && read_text(installed) == wanted) return std::nullopt;
  if (fs::exists(failed)) {
    const auto age = fs::file_time_type::clock::now() - fs::last_write_time(failed, error);
    if (!error && age < std::chrono::minutes(10)) return "npm ci failed a moment ago: " + read_text(failed);
  }
  fs::copy_file(kSource / "package-lock.json", kPrefix / "package-lock.json",
                fs::copy_options::overwrite_existing, error);
  const ProcessResult result = run_process(
      {"/bin/sh", "-c",
       "cd '" + kPrefix.string() +
           "' && npm ci --no-audit --no-fund --engine-strict=false --fetch-retries=1 --fetch-timeout=30000 "
           "--loglevel=error"},
      {}, std::chrono::seconds(240));
  if (result.exit_code != 0) {
    const std::string why =
        "npm ci exited " + std::to_string(result.exit_code) + ": " + result.err.substr(0, 2000);
    std::ofstream(failed) << why;
    return why;
  }
  fs::remove(failed, error);
  std::ofstream(installed, std::ios::binary) << wanted;
  return std::nullopt;
}

}  // namespace

std::optional<std::string> s3_server_unavailable() {
  static std::once_flag once;
  static std::optional<std::string> why;
  std::call_once(once, [] { why = install(); });
  return why;
}

bool s3_server_required() {
  const char* value = std::getenv("CONVEYOR_REQUIRE_S3");
  return value != nullptr && std::string(value) == "1";
}

fs::path s3_server_script() { return kPrefix / "serve.js"; }

S3TestServer::S3TestServer(Options options) : options_(std::move(options)) {
  std::error_code error;
  fs::create_directories(options_.directory, error);
  start(!options_.upload.empty());
}

S3TestServer::~S3TestServer() { kill(); }

std::string S3TestServer::endpoint() const {
  return "http://" + options_.address + ":" + std::to_string(port_);
}

void S3TestServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

void S3TestServer::restart() {
  kill();
  start(false);
}

void S3TestServer::start(bool upload) {
  // The legacy provider: the server makes its continuation tokens with DES, which Node's OpenSSL 3 offers
  // only there (without it a listing that has a next page fails with InternalError).
  std::vector<std::string> args{"node",
                                "--openssl-legacy-provider",
                                s3_server_script().string(),
                                "--directory",
                                options_.directory.string(),
                                "--address",
                                options_.address,
                                "--port",
                                std::to_string(port_)};
  for (const std::string& bucket : options_.buckets) args.insert(args.end(), {"--bucket", bucket});
  if (upload) args.insert(args.end(), {"--upload", options_.upload.string(), "--into", options_.into});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("S3TestServer: pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
  const int spawned = ::posix_spawnp(&pid_, "node", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (spawned != 0) {
    ::close(out[0]);
    pid_ = -1;
    throw std::runtime_error("S3TestServer: cannot start node");
  }
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    if (const std::size_t at = output.find("listening ");
        at != std::string::npos && output.find('\n', at) != std::string::npos) {
      const std::size_t colon = output.rfind(':', output.find('\n', at));
      port_ = std::stoi(output.substr(colon + 1));
      break;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd ready{out[0], POLLIN, 0};
    char buffer[4096];
    const ssize_t n = left.count() > 0 && ::poll(&ready, 1, static_cast<int>(left.count())) > 0
                          ? ::read(out[0], buffer, sizeof buffer)
                          : -1;
    if (n <= 0) {
      ::close(out[0]);
      kill();
      throw std::runtime_error("S3TestServer: the server did not start: " + output);
    }
    output.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(out[0]);  // it writes nothing more
}

std::vector<std::pair<std::string, std::string>> s3_environment(const S3TestServer& server,
                                                                const std::string& key,
                                                                const std::string& secret) {
  return {{"AWS_ENDPOINT_URL", server.endpoint()},
          {"AWS_ACCESS_KEY_ID", key},
          {"AWS_SECRET_ACCESS_KEY", secret},
          {"AWS_REGION", "us-east-1"}};
}

}  // namespace conveyor::testing
