// A real S3-compatible server for the tests of s3:// shards: @20minutes/s3rver under Node, from the npm
// registry (tests/support/s3server/: package.json and package-lock.json pin it; the first test that needs
// it installs it into the build folder with `npm ci`, under a file lock). It checks Signature Version 4
// (a wrong secret is refused with SignatureDoesNotMatch, a wrong key with InvalidAccessKeyId), serves Range
// requests and ListObjectsV2 with continuation tokens. One account: access key S3RVER, secret S3RVER.
// Without node and npm, or without the registry, s3_server_unavailable() says why: the tests skip then,
// unless CONVEYOR_REQUIRE_S3=1 (CI), which makes it a failure.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace conveyor::testing {

// Why the server cannot run here (nullopt: it can); installs it on the first call.
std::optional<std::string> s3_server_unavailable();
// The installed server's launcher (serve.js in the build folder).
std::filesystem::path s3_server_script();

// Skips the test (or fails it under CONVEYOR_REQUIRE_S3=1) when the server cannot run.
#define CONVEYOR_REQUIRE_S3_SERVER()                                                           \
  do {                                                                                         \
    if (const std::optional<std::string> why = ::conveyor::testing::s3_server_unavailable()) { \
      if (::conveyor::testing::s3_server_required())                                           \
        FAIL() << "CONVEYOR_REQUIRE_S3=1, and the S3 test server cannot run: " << *why;        \
      GTEST_SKIP() << "no S3 test server: " << *why;                                           \
    }                                                                                          \
  } while (false)
bool s3_server_required();

class S3TestServer {
 public:
  struct Options {
    std::filesystem::path directory;   // where the server keeps its buckets (kept across restarts)
    std::vector<std::string> buckets;  // made at start-up
    std::filesystem::path upload;      // when set: its files are put under `into` ("bucket/prefix/")
    std::string into;
    std::string address = "127.0.0.1";
  };
  // Starts it and waits until it listens (30 s at most). Throws std::runtime_error with its output.
  explicit S3TestServer(Options options);
  ~S3TestServer();  // kills it
  S3TestServer(const S3TestServer&) = delete;
  S3TestServer& operator=(const S3TestServer&) = delete;

  // "http://ADDRESS:PORT": what AWS_ENDPOINT_URL names.
  std::string endpoint() const;
  int port() const noexcept { return port_; }
  // Kills it at once (SIGKILL): connections drop mid-transfer.
  void kill();
  // Starts it again on the same port and folder (without uploading again).
  void restart();

 private:
  void start(bool upload);

  Options options_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// The variables that point a reader at `server` with the server's account (or another key or secret).
std::vector<std::pair<std::string, std::string>> s3_environment(const S3TestServer& server,
                                                                const std::string& key = "S3RVER",
                                                                const std::string& secret = "S3RVER");

}  // namespace conveyor::testing
