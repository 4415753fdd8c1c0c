// The service's transport, behind interfaces: what the dispatcher, the workers and the trainers ask of the
// network, and nothing of how. gRPC implements them (grpc_*.cpp, the only files that include grpc++); a data
// plane of another kind (RDMA) would implement the data plane's part and leave every other file as it is.
// Shared memory between a worker and a trainer of one host needs none: the stream carries the worker's offer
// of a region and, for each batch lent in it, its tensors' offsets (common/shared_region.h).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "conveyor/service/endpoint.h"
#include "conveyor/service/service_error.h"
#include "src/service/common/batch_codec.h"
#include "src/service/wire/conveyor_service_v1.pb.h"

namespace conveyor::service::detail {

namespace v1 = ::conveyor::service::v1;

struct LinkOptions {
  Tls tls;
  std::chrono::milliseconds call_timeout{5000};  // every control call's deadline
  // Streams: gRPC keepalive pings so that a worker lost without a word (a cable, a frozen host) is noticed.
  std::chrono::milliseconds keepalive{2000};
  // The largest frame a worker may send this trainer (a batch and its header); larger ones are refused by the
  // transport before they are read. 0: gRPC's default (4 MB), too small for most batches.
  std::size_t max_frame_bytes = 0;
};

// ---- the control plane: the dispatcher's calls ----

// What the dispatcher answers (DispatcherCore, served by serve_dispatcher; throwing ServiceError refuses a
// call), and the same calls as a trainer or a worker makes them over the network (connect_dispatcher; every
// method throws ServiceError).
class DispatcherCalls {
 public:
  virtual ~DispatcherCalls() = default;
  virtual v1::JoinJobResponse join_job(const v1::JoinJobRequest& request) = 0;
  virtual v1::DescribeJobResponse describe_job(const v1::DescribeJobRequest& request) = 0;
  virtual v1::GetSplitResponse get_split(const v1::GetSplitRequest& request) = 0;
  virtual v1::ClientHeartbeatResponse client_heartbeat(const v1::ClientHeartbeatRequest& request) = 0;
  virtual v1::RegisterWorkerResponse register_worker(const v1::RegisterWorkerRequest& request) = 0;
  virtual v1::WorkerHeartbeatResponse worker_heartbeat(const v1::WorkerHeartbeatRequest& request) = 0;
  virtual v1::GetJobResponse get_job(const v1::GetJobRequest& request) = 0;
  virtual v1::GetStatusResponse get_status(const v1::GetStatusRequest& request) = 0;
};
// A client's link to a dispatcher: its calls, made over the network.
using DispatcherLink = DispatcherCalls;
std::unique_ptr<DispatcherLink> connect_dispatcher(const std::string& address, const LinkOptions& options);

// ---- the data plane: a trainer's stream of split requests to one worker, its batches back ----

// A frame as received: byte ranges in order, valid while `owner` lives.
struct ReceivedFrame {
  std::vector<std::span<const std::byte>> slices;
  std::shared_ptr<void> owner;
  std::size_t bytes = 0;         // received from the network
  std::size_t shared_bytes = 0;  // of the slices, those in a worker's shared memory (a lent batch)
};

// The trainer's side of one stream. Called on the transport's threads: quick, never blocking.
class StreamHandler {
 public:
  virtual ~StreamHandler() = default;
  // A frame arrived. Returning false stops reading (the worker's sends then wait in flow control) until
  // SplitStream::resume().
  virtual bool on_frame(ReceivedFrame frame) = 0;
  // The stream is over: closed by this side (error empty), or ended by the worker or the network (a
  // ServiceError saying why). Called exactly once, last.
  virtual void on_closed(std::exception_ptr error) = 0;
};

class SplitStream {
 public:
  // Cancels the stream if it is open and returns once on_closed has been called.
  virtual ~SplitStream() = default;
  // Sends a message on the stream: asks for one more split, answers the worker's offer of shared memory,
  // releases lent batches (queued; never blocks).
  virtual void send(const v1::ClientMessage& message) = 0;
  // Reads again after on_frame returned false.
  virtual void resume() = 0;
  // Ends the stream from this side; on_closed follows.
  virtual void cancel() = 0;
};

class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  // Opens a stream; `handler` must outlive the returned stream.
  virtual std::unique_ptr<SplitStream> open(const v1::StreamOpen& open, StreamHandler& handler) = 0;
  virtual v1::DescribeChainResponse describe_chain(const v1::DescribeChainRequest& request) = 0;
};
std::unique_ptr<WorkerLink> connect_worker(const std::string& address, const LinkOptions& options);

// The worker's side: a stream as its session sees it.
class FrameSink {
 public:
  virtual ~FrameSink() = default;
  // Sends one frame. Waits while the stream has `depth` frames the network has not taken yet (the trainer's
  // flow control reaches the worker here). False once the stream is over: the frame was not sent.
  virtual bool send(Frame frame) = 0;
  // Ends the stream with an error the trainer will see (it stops reading this stream).
  virtual void fail(const ServiceError& error) = 0;
};

class StreamSession {
 public:
  virtual ~StreamSession() = default;
  // One more split asked for (transport thread: quick).
  virtual void on_request(const v1::SplitRequest& split) = 0;
  // The trainer's answer to the stream's SharedMemoryOffer, and its releases of lent batches (transport
  // thread: quick).
  virtual void on_shared_memory(const v1::SharedMemoryAnswer& answer) = 0;
  virtual void on_release(const v1::Release& release) = 0;
  // The trainer went away or cancelled: stop this stream's work (transport thread: quick).
  virtual void on_closed() = 0;
};

// What a worker serves.
class WorkerCalls {
 public:
  virtual ~WorkerCalls() = default;
  // A stream opened: its session, or a ServiceError refusing it (token, version, unknown job, data).
  virtual std::shared_ptr<StreamSession> open(const v1::StreamOpen& open,
                                              std::shared_ptr<FrameSink> sink) = 0;
  virtual v1::DescribeChainResponse describe_chain(const v1::DescribeChainRequest& request) = 0;
};

// A listening server; stops (and waits for its calls to end) when destroyed.
class Server {
 public:
  virtual ~Server() = default;
  virtual int port() const noexcept = 0;
};
// `listen`: "host:port" (port 0: a free one, see port()). Throws ServiceError when it cannot listen.
std::unique_ptr<Server> serve_dispatcher(DispatcherCalls& calls, const std::string& listen, const Tls& tls);
std::unique_ptr<Server> serve_worker(WorkerCalls& calls, const std::string& listen, const Tls& tls,
                                     std::size_t stream_depth);

}  // namespace conveyor::service::detail
