// What arrives at a dispatcher or a worker that is not what conveyor sends: bytes that do not parse, messages
// over the limits, a stream that does not open first, another protocol version, a job nobody knows, a method
// nobody serves. Each is refused with its status and reason, nothing crashes, and the same worker goes on
// serving a real trainer. (Raw gRPC calls, as another program would make them: the one test file that
// includes grpc++.) And TLS: a service with certificates serves a trainer that has them, not one without.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "conveyor/service/client.h"
#include "conveyor/service/dispatcher.h"
#include "conveyor/service/service_error.h"
#include "conveyor/service/status.h"
#include "conveyor/service/worker.h"
#include "conveyor/version.h"
#include "src/service/common/protocol.h"
#include "src/service/wire/conveyor_service_v1.pb.h"
#include "support/subprocess.h"
#include "support/watchdog.h"
#include "tests/pipeline/fixtures.h"

namespace conveyor::service {
namespace {

using namespace std::chrono_literals;
namespace v1 = ::conveyor::service::v1;

grpc::ByteBuffer bytes(const std::string& text) {
  grpc::Slice slice(text);
  return grpc::ByteBuffer(&slice, 1);
}

std::string message(const google::protobuf::Message& m) { return m.SerializeAsString(); }

// Sends `first` (and `second`, when given) on a raw stream of `method`; the status the server ends it with.
grpc::Status stream_status(const std::string& address, const std::string& method, const std::string& first,
                           const std::string& second = "") {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  auto call = stub.PrepareCall(&context, method, &queue);
  void* tag = nullptr;
  bool ok = false;
  auto step = [&](void* expected) {
    EXPECT_TRUE(queue.Next(&tag, &ok));
    EXPECT_EQ(tag, expected);
    return ok;
  };
  call->StartCall(reinterpret_cast<void*>(1));
  if (step(reinterpret_cast<void*>(1))) {
    call->Write(bytes(first), reinterpret_cast<void*>(2));
    if (step(reinterpret_cast<void*>(2)) && !second.empty()) {
      call->Write(bytes(second), reinterpret_cast<void*>(3));
      step(reinterpret_cast<void*>(3));
    }
    grpc::ByteBuffer reply;
    call->Read(&reply, reinterpret_cast<void*>(4));  // the server ends the stream: this read fails
    step(reinterpret_cast<void*>(4));
  }
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(5));
  step(reinterpret_cast<void*>(5));
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

// A unary call of `method` with raw `request` bytes.
grpc::Status unary_status(const std::string& address, const std::string& method, const std::string& request) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue queue;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  auto call = stub.PrepareUnaryCall(&context, method, bytes(request), &queue);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  EXPECT_TRUE(queue.Next(&tag, &ok));
  queue.Shutdown();
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

v1::ClientMessage opening(std::uint64_t job, std::uint32_t protocol = detail::kProtocolVersion) {
  v1::ClientMessage m;
  m.mutable_open()->mutable_caller()->set_protocol(protocol);
  m.mutable_open()->mutable_caller()->set_version(CONVEYOR_VERSION_STRING);
  m.mutable_open()->set_job_id(job);
  return m;
}

class Wire : public ::testing::Test {
 protected:
  void SetUp() override {
    folder_ = testing::make_jpeg_folder(dir_, 2, 8, 40, 56);
    DispatcherOptions d;
    d.listen_host = "127.0.0.1";
    dispatcher_ = std::make_unique<Dispatcher>(d);
  }
  std::string url() const { return "grpc://127.0.0.1:" + std::to_string(dispatcher_->port()); }
  ChainSpec chain() const {
    return {.name = "standard", .parameters = {{"data", folder_.string()}, {"size", "16"}}};
  }
  static ServiceOptions options() {
    ServiceOptions o;
    o.batch_size = 4;
    o.split_batches = 1;
    o.local_fallback = false;
    return o;
  }
  void wait_for_worker() const {
    for (int i = 0; i < 500 && service_status(url()).workers.empty(); ++i) std::this_thread::sleep_for(10ms);
  }

  testing::TempDir dir_;
  std::filesystem::path folder_;
  std::unique_ptr<Dispatcher> dispatcher_;
};

TEST_F(Wire, AWorkerRefusesWhatIsNotConveyorsAndGoesOnServing) {
  const testing::Watchdog watchdog(60s, "malformed messages to a worker");
  WorkerOptions w;
  w.dispatcher = url();
  w.listen_host = "127.0.0.1";
  w.threads = 1;
  w.heartbeat = 100ms;
  Worker worker(w);
  wait_for_worker();
  const std::string splits = detail::kSplitsMethod;
  EXPECT_EQ(stream_status(worker.address(), splits, "\xff\xff\xff garbage").error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(stream_status(worker.address(), splits, std::string(100 << 10, 'x')).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::ClientMessage split;
  split.mutable_split()->set_split(0);
  EXPECT_EQ(stream_status(worker.address(), splits, message(split)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(stream_status(worker.address(), splits, message(opening(1, 99))).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  const grpc::Status unknown = stream_status(worker.address(), splits, message(opening(999)));
  EXPECT_EQ(unknown.error_code(), grpc::StatusCode::NOT_FOUND) << unknown.error_message();
  EXPECT_EQ(stream_status(worker.address(), "/conveyor.service.v1.Worker/Nothing", "x").error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_GE(worker.counters().refused, 2u);

  // A real trainer, served by the same worker.
  std::size_t samples = 0;
  for (const Batch& batch : from_service(url(), chain(), options())) samples += batch.size();
  EXPECT_EQ(samples, 16u);
  EXPECT_GT(worker.counters().batches, 0u);
}

TEST_F(Wire, TheDispatcherRefusesOversizedAndMalformedCalls) {
  const testing::Watchdog watchdog(60s, "malformed messages to the dispatcher");
  const std::string address = "127.0.0.1:" + std::to_string(dispatcher_->port());
  const std::string join = "/conveyor.service.v1.Dispatcher/JoinJob";
  EXPECT_EQ(unary_status(address, join, std::string(5 << 20, 'x')).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  const grpc::Status garbage = unary_status(address, join, "\xff\xff\xff\xff");
  EXPECT_FALSE(garbage.ok());
  EXPECT_NE(garbage.error_code(), grpc::StatusCode::UNAVAILABLE) << "the dispatcher must stay up";
  v1::JoinJobRequest old;
  old.mutable_caller()->set_protocol(99);
  const grpc::Status version = unary_status(address, join, message(old));
  EXPECT_EQ(version.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(version.error_message().find("protocol 99"), std::string::npos) << version.error_message();
  EXPECT_NO_THROW((void)service_status(url()));
}

// A CA, and a certificate it signed for 127.0.0.1, made with the openssl program; TLS's folder layout.
std::filesystem::path make_certificates(const testing::TempDir& dir) {
  const std::filesystem::path tls = dir / "tls";
  std::filesystem::create_directories(tls);
  const std::string d = tls.string();
  const std::vector<std::vector<std::string>> steps = {
      {"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
       "/CN=conveyor test CA", "-keyout", d + "/ca.key", "-out", d + "/ca.pem"},
      {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout", d + "/key.pem",
       "-out", d + "/node.csr"},
      {"openssl", "x509", "-req", "-in", d + "/node.csr", "-CA", d + "/ca.pem", "-CAkey", d + "/ca.key",
       "-CAcreateserial", "-days", "1", "-extfile", d + "/san.cnf", "-out", d + "/cert.pem"}};
  std::ofstream(tls / "san.cnf") << "subjectAltName=IP:127.0.0.1\n";
  for (const auto& step : steps) {
    std::vector<std::string> argv = step;
    argv[0] = "/usr/bin/openssl";
    const testing::ProcessResult result = testing::run_process(argv, {}, 60s);
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }
  return tls;
}

TEST_F(Wire, WithTlsATrainerWithTheCertificatesIsServedAndOneWithoutIsNot) {
  const testing::Watchdog watchdog(90s, "TLS");
  if (!std::filesystem::exists("/usr/bin/openssl")) GTEST_SKIP() << "no openssl program to make certificates";
  const Tls tls = Tls::from_folder(make_certificates(dir_));
  DispatcherOptions d;
  d.listen_host = "127.0.0.1";
  d.tls = tls;
  Dispatcher secure(d);
  const std::string secure_url = "grpc://127.0.0.1:" + std::to_string(secure.port());
  WorkerOptions w;
  w.dispatcher = secure_url;
  w.listen_host = "127.0.0.1";
  w.threads = 1;
  w.heartbeat = 100ms;
  w.tls = tls;
  Worker worker(w);
  for (int i = 0; i < 500 && service_status(secure_url, tls).workers.empty(); ++i)
    std::this_thread::sleep_for(10ms);
  ServiceOptions o = options();
  o.tls = tls;
  o.timeout = 2000ms;
  std::size_t samples = 0;
  for (const Batch& batch : from_service(secure_url, chain(), o)) samples += batch.size();
  EXPECT_EQ(samples, 16u);
  EXPECT_GT(worker.counters().bytes_sent, 0u);
  o.tls = {};
  o.chains = ChainRegistry();
  try {
    (void)from_service(secure_url, {.name = "standard", .parameters = {{"data", "/nowhere"}}}, o);
    FAIL() << "a trainer without the certificates was let in";
  } catch (const ServiceError& error) {
    EXPECT_EQ(error.kind(), ServiceError::Kind::unavailable) << error.what();
  }
}

}  // namespace
}  // namespace conveyor::service
