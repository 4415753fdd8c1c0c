// The dispatcher's calls over gRPC: the generated stub behind DispatcherLink, the generated service in front
// of DispatcherCalls.
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "src/service/common/protocol.h"
#include "src/service/transport/grpc_common.h"
#include "src/service/transport/links.h"
#include "src/service/wire/conveyor_service_v1.grpc.pb.h"

namespace conveyor::service::detail {
namespace {

class GrpcDispatcherLink final : public DispatcherLink {
 public:
  GrpcDispatcherLink(const std::string& address, const LinkOptions& options)
      : address_(address),
        options_(options),
        stub_(v1::Dispatcher::NewStub(make_channel(address, options, kMaxControlMessageBytes))) {}

  v1::JoinJobResponse join_job(const v1::JoinJobRequest& r) override {
    return call("JoinJob", r, &v1::Dispatcher::Stub::JoinJob);
  }
  v1::DescribeJobResponse describe_job(const v1::DescribeJobRequest& r) override {
    return call("DescribeJob", r, &v1::Dispatcher::Stub::DescribeJob);
  }
  v1::GetSplitResponse get_split(const v1::GetSplitRequest& r) override {
    return call("GetSplit", r, &v1::Dispatcher::Stub::GetSplit);
  }
  v1::ClientHeartbeatResponse client_heartbeat(const v1::ClientHeartbeatRequest& r) override {
    return call("ClientHeartbeat", r, &v1::Dispatcher::Stub::ClientHeartbeat);
  }
  v1::RegisterWorkerResponse register_worker(const v1::RegisterWorkerRequest& r) override {
    return call("RegisterWorker", r, &v1::Dispatcher::Stub::RegisterWorker);
  }
  v1::WorkerHeartbeatResponse worker_heartbeat(const v1::WorkerHeartbeatRequest& r) override {
    return call("WorkerHeartbeat", r, &v1::Dispatcher::Stub::WorkerHeartbeat);
  }
  v1::GetJobResponse get_job(const v1::GetJobRequest& r) override {
    return call("GetJob", r, &v1::Dispatcher::Stub::GetJob);
  }
  v1::GetStatusResponse get_status(const v1::GetStatusRequest& r) override {
    return call("GetStatus", r, &v1::Dispatcher::Stub::GetStatus);
  }

 private:
  template <class Request, class Response>
  Response call(const char* name, const Request& request,
                grpc::Status (v1::Dispatcher::Stub::*method)(grpc::ClientContext*, const Request&,
                                                             Response*)) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    Response response;
    const grpc::Status status = (stub_.get()->*method)(&context, request, &response);
    if (!status.ok()) throw error_of(status, std::string("dispatcher ") + address_ + ": " + name);
    return response;
  }

  const std::string address_;
  const LinkOptions options_;
  std::unique_ptr<v1::Dispatcher::Stub> stub_;
};

// Each call handed to DispatcherCalls on one of gRPC's threads; an exception becomes the call's status.
class DispatcherService final : public v1::Dispatcher::Service {
 public:
  explicit DispatcherService(DispatcherCalls& calls) : calls_(calls) {}

  grpc::Status JoinJob(grpc::ServerContext*, const v1::JoinJobRequest* r, v1::JoinJobResponse* out) override {
    return answer([&] { *out = calls_.join_job(*r); });
  }
  grpc::Status DescribeJob(grpc::ServerContext*, const v1::DescribeJobRequest* r,
                           v1::DescribeJobResponse* out) override {
    return answer([&] { *out = calls_.describe_job(*r); });
  }
  grpc::Status GetSplit(grpc::ServerContext*, const v1::GetSplitRequest* r,
                        v1::GetSplitResponse* out) override {
    return answer([&] { *out = calls_.get_split(*r); });
  }
  grpc::Status ClientHeartbeat(grpc::ServerContext*, const v1::ClientHeartbeatRequest* r,
                               v1::ClientHeartbeatResponse* out) override {
    return answer([&] { *out = calls_.client_heartbeat(*r); });
  }
  grpc::Status RegisterWorker(grpc::ServerContext*, const v1::RegisterWorkerRequest* r,
                              v1::RegisterWorkerResponse* out) override {
    return answer([&] { *out = calls_.register_worker(*r); });
  }
  grpc::Status WorkerHeartbeat(grpc::ServerContext*, const v1::WorkerHeartbeatRequest* r,
                               v1::WorkerHeartbeatResponse* out) override {
    return answer([&] { *out = calls_.worker_heartbeat(*r); });
  }
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* r, v1::GetJobResponse* out) override {
    return answer([&] { *out = calls_.get_job(*r); });
  }
  grpc::Status GetStatus(grpc::ServerContext*, const v1::GetStatusRequest* r,
                         v1::GetStatusResponse* out) override {
    return answer([&] { *out = calls_.get_status(*r); });
  }

 private:
  template <class F>
  static grpc::Status answer(F&& body) {
    try {
      body();
      return grpc::Status::OK;
    } catch (...) {
      return status_of_current_exception();
    }
  }
  DispatcherCalls& calls_;
};

class GrpcServer final : public Server {
 public:
  GrpcServer(std::unique_ptr<grpc::Service> service, const std::string& listen, const Tls& tls)
      : service_(std::move(service)) {
    grpc::ServerBuilder builder;
    configure_server(builder, listen, tls, &port_, kMaxControlMessageBytes);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0)
      throw ServiceError(ServiceError::Kind::unavailable, "cannot listen on " + listen);
  }
  ~GrpcServer() override {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  int port() const noexcept override { return port_; }

 private:
  std::unique_ptr<grpc::Service> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace

std::unique_ptr<DispatcherLink> connect_dispatcher(const std::string& address, const LinkOptions& options) {
  return std::make_unique<GrpcDispatcherLink>(address, options);
}

std::unique_ptr<Server> serve_dispatcher(DispatcherCalls& calls, const std::string& listen, const Tls& tls) {
  return std::make_unique<GrpcServer>(std::make_unique<DispatcherService>(calls), listen, tls);
}

}  // namespace conveyor::service::detail
