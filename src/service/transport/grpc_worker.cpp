// The worker's calls over gRPC: DescribeChain through the generated service, and the data plane as a raw
// bidirectional stream ("/conveyor.service.v1.Worker/Splits") on gRPC's callback API, so that a batch goes
// out as the byte ranges of its own memory (no protobuf copy) and arrives as the slices gRPC received.
//
// Flow control, end to end: the trainer reads a frame only when its receive queue has room (StreamHandler's
// on_frame returns false otherwise), so HTTP/2's window closes; the worker then has one frame in gRPC's hands
// and at most `depth` queued (FrameSink::send waits), so its split's pipeline stops at its pool's bound.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/service/common/protocol.h"
#include "src/service/transport/grpc_common.h"
#include "src/service/transport/links.h"
#include "src/service/wire/conveyor_service_v1.grpc.pb.h"

namespace conveyor::service::detail {
namespace {

grpc::ByteBuffer serialized(const google::protobuf::Message& message) {
  const std::string bytes = message.SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

// A frame as slices that view its memory; each slice keeps the frame's owner alive until gRPC lets it go.
grpc::ByteBuffer byte_buffer_of(Frame frame) {
  std::vector<grpc::Slice> slices;
  slices.reserve(1 + frame.payload.size());
  slices.emplace_back(frame.head);
  for (const std::span<const std::byte>& range : frame.payload) {
    if (range.empty()) continue;
    auto* owner = new std::shared_ptr<const void>(frame.keep_alive);
    slices.emplace_back(
        const_cast<std::byte*>(range.data()), range.size(),
        [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); }, owner);
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// ---- the worker's side of a stream ----

class SplitsReactor;

// What a stream's session and its reactor share. The reactor lives until gRPC's OnDone, which comes only
// after Finish; Finish is called once, when no write is in flight, and nothing starts a write after it.
struct StreamState {
  std::mutex mutex;
  std::condition_variable room;
  std::deque<grpc::ByteBuffer> queue;  // front: the frame being written, when writing
  std::size_t depth = 2;
  bool writing = false;
  bool over = false;  // no more frames: cancelled, broken, failing or finished
  bool finished = false;
  std::optional<grpc::Status> finish_with;  // Finish with this once the write in flight is done
  std::shared_ptr<StreamSession> session;
  bool session_closed = false;

  // Under the lock: the status to Finish with now (once), when the stream is over and nothing is in flight.
  std::optional<grpc::Status> take_finish() {
    if (!over || writing || finished || !finish_with) return std::nullopt;
    finished = true;
    queue.clear();
    return finish_with;
  }
};

// Ends the stream with `status` once the write in flight (if any) is done; idempotent. `reactor` is touched
// only by the one caller that takes the Finish, and it is alive then: OnDone (which deletes it) follows
// Finish.
void end_stream(StreamState& state, grpc::ServerGenericBidiReactor* reactor, const grpc::Status& status) {
  std::optional<grpc::Status> finish;
  {
    std::lock_guard lock(state.mutex);
    if (!state.over) {
      state.over = true;
      state.finish_with = status;
    }
    finish = state.take_finish();
  }
  state.room.notify_all();
  if (finish) reactor->Finish(*finish);
}

class SplitsReactor final : public grpc::ServerGenericBidiReactor {
 public:
  SplitsReactor(WorkerCalls& calls, std::size_t depth)
      : calls_(calls), state_(std::make_shared<StreamState>()) {
    state_->depth = depth;
    StartRead(&incoming_);
  }

  // The session's way to send: a FrameSink over the shared state.
  class Sink final : public FrameSink {
   public:
    Sink(std::shared_ptr<StreamState> state, SplitsReactor* reactor)
        : state_(std::move(state)), reactor_(reactor) {}
    bool send(Frame frame) override {
      grpc::ByteBuffer buffer = byte_buffer_of(std::move(frame));
      const grpc::ByteBuffer* start = nullptr;
      {
        std::unique_lock lock(state_->mutex);
        state_->room.wait(lock, [&] { return state_->over || state_->queue.size() < state_->depth; });
        if (state_->over) return false;
        state_->queue.push_back(std::move(buffer));
        if (!state_->writing) {
          state_->writing = true;
          start = &state_->queue.front();
        }
      }
      if (start) reactor_->StartWrite(start);  // alive: Finish has not been called (over is false)
      return true;
    }
    void fail(const ServiceError& error) override {
      end_stream(*state_, reactor_, grpc::Status(status_code(error.kind()), error.what()));
    }

   private:
    std::shared_ptr<StreamState> state_;
    SplitsReactor* reactor_;
  };

  void OnReadDone(bool ok) override {
    if (!ok) return;  // the trainer cancelled or half-closed: OnCancel says the rest
    v1::ClientMessage message;
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (incoming_.Dump(&slices).ok())
      for (const grpc::Slice& slice : slices)
        bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
    incoming_.Clear();
    if (!message.ParseFromString(bytes))
      return end({grpc::StatusCode::INVALID_ARGUMENT, "a message that does not parse"});
    std::shared_ptr<StreamSession> session;
    {
      std::lock_guard lock(state_->mutex);
      session = state_->session;
    }
    if (!session) {
      if (!message.has_open())
        return end({grpc::StatusCode::INVALID_ARGUMENT, "the stream's first message must open it"});
      try {
        session = calls_.open(message.open(), std::make_shared<Sink>(state_, this));
      } catch (...) {
        return end(status_of_current_exception());
      }
      std::lock_guard lock(state_->mutex);
      state_->session = session;
    } else if (message.has_split()) {
      session->on_request(message.split());
    } else if (message.has_shared_memory()) {
      session->on_shared_memory(message.shared_memory());
    } else if (message.has_release()) {
      session->on_release(message.release());
    } else {
      return end({grpc::StatusCode::INVALID_ARGUMENT, message.has_open()
                                                          ? "a second opening of the stream"
                                                          : "a message of no kind this worker knows"});
    }
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    const grpc::ByteBuffer* next = nullptr;
    std::optional<grpc::Status> finish;
    {
      std::lock_guard lock(state_->mutex);
      state_->queue.pop_front();
      state_->writing = false;
      if (!ok && !state_->over) {
        state_->over = true;
        state_->finish_with = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the trainer is gone");
      }
      if (!state_->over && !state_->queue.empty()) {
        state_->writing = true;
        next = &state_->queue.front();
      }
      finish = state_->take_finish();
    }
    state_->room.notify_all();
    if (next) StartWrite(next);
    if (finish) Finish(*finish);
  }

  void OnCancel() override {
    end(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"));
    close_session();
  }

  void OnDone() override {
    close_session();
    // The session holds the sink, which holds this state: the state lets the session go, or neither would.
    // Released outside the lock (the session's destructor joins its thread, which may be sending).
    std::shared_ptr<StreamSession> session;
    {
      std::lock_guard lock(state_->mutex);
      session.swap(state_->session);
    }
    session.reset();
    delete this;
  }

  void end(const grpc::Status& status) { end_stream(*state_, this, status); }

 private:
  void close_session() {
    std::shared_ptr<StreamSession> session;
    {
      std::lock_guard lock(state_->mutex);
      if (state_->session_closed) return;
      state_->session_closed = true;
      session = state_->session;
    }
    if (session) session->on_closed();
  }

  WorkerCalls& calls_;
  std::shared_ptr<StreamState> state_;
  grpc::ByteBuffer incoming_;
};

// Any other method of the generic service.
class Unimplemented final : public grpc::ServerGenericBidiReactor {
 public:
  explicit Unimplemented(const std::string& method) {
    Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no method " + method + " on a conveyor worker"));
  }
  void OnDone() override { delete this; }
};

class SplitsService final : public grpc::CallbackGenericService {
 public:
  SplitsService(WorkerCalls& calls, std::size_t depth) : calls_(calls), depth_(depth) {}
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    if (context->method() != kSplitsMethod) return new Unimplemented(context->method());
    return new SplitsReactor(calls_, depth_);
  }

 private:
  WorkerCalls& calls_;
  const std::size_t depth_;
};

class DescribeService final : public v1::Worker::Service {
 public:
  explicit DescribeService(WorkerCalls& calls) : calls_(calls) {}
  grpc::Status DescribeChain(grpc::ServerContext*, const v1::DescribeChainRequest* request,
                             v1::DescribeChainResponse* response) override {
    try {
      *response = calls_.describe_chain(*request);
      return grpc::Status::OK;
    } catch (...) {
      return status_of_current_exception();
    }
  }

 private:
  WorkerCalls& calls_;
};

class WorkerServer final : public Server {
 public:
  WorkerServer(WorkerCalls& calls, const std::string& listen, const Tls& tls, std::size_t depth)
      : splits_(calls, depth), describe_(calls) {
    grpc::ServerBuilder builder;
    configure_server(builder, listen, tls, &port_, kMaxClientFrameBytes);
    builder.RegisterService(&describe_);
    builder.RegisterCallbackGenericService(&splits_);
    server_ = builder.BuildAndStart();
    if (!server_ || port_ == 0)
      throw ServiceError(ServiceError::Kind::unavailable, "cannot listen on " + listen);
  }
  ~WorkerServer() override {
    // Open streams are cancelled (their sessions hear on_closed); the deadline bounds a stuck handler.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
  }
  int port() const noexcept override { return port_; }

 private:
  SplitsService splits_;
  DescribeService describe_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// ---- the trainer's side of a stream ----

class GrpcSplitStream final : public SplitStream,
                              public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  GrpcSplitStream(grpc::GenericStub& stub, const std::string& address, const v1::StreamOpen& open,
                  StreamHandler& handler)
      : address_(address), handler_(handler) {
    stub.PrepareBidiStreamingCall(&context_, kSplitsMethod, grpc::StubOptions(), this);
    v1::ClientMessage message;
    *message.mutable_open() = open;
    outgoing_.push_back(serialized(message));
    writing_ = true;
    reading_ = true;
    StartWrite(&outgoing_.front());
    StartRead(&incoming_);
    AddHold();  // operations may start after the call's own end until released (release_hold)
    StartCall();
  }

  ~GrpcSplitStream() override {
    cancel();
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return done_; });
  }

  void send(const v1::ClientMessage& message) override {
    grpc::ByteBuffer buffer = serialized(message);
    const grpc::ByteBuffer* start = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (closing_) return;
      outgoing_.push_back(std::move(buffer));
      if (!writing_) {
        writing_ = true;
        start = &outgoing_.front();
      }
    }
    if (start) StartWrite(start);
  }

  void resume() override { read_again(); }

  void cancel() override {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    context_.TryCancel();
    release_hold();
  }

  void OnWriteDone(bool ok) override {
    const grpc::ByteBuffer* next = nullptr;
    {
      std::lock_guard lock(mutex_);
      outgoing_.pop_front();
      writing_ = false;
      if (ok && !closing_ && !outgoing_.empty()) {
        writing_ = true;
        next = &outgoing_.front();
      }
    }
    if (next) StartWrite(next);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream is over (the worker ended it, the network broke it, or we cancelled)
      {
        std::lock_guard lock(mutex_);
        reading_ = false;
      }
      release_hold();
      return;
    }
    ReceivedFrame frame;
    auto slices = std::make_shared<std::vector<grpc::Slice>>();
    if (!incoming_.Dump(slices.get()).ok()) slices->clear();
    incoming_.Clear();
    for (const grpc::Slice& slice : *slices) {
      frame.slices.emplace_back(reinterpret_cast<const std::byte*>(slice.begin()), slice.size());
      frame.bytes += slice.size();
    }
    frame.owner = slices;
    {
      // Not reading from here on: a resume() during on_frame starts the next read itself.
      std::lock_guard lock(mutex_);
      reading_ = false;
    }
    if (handler_.on_frame(std::move(frame))) read_again();
  }

  void OnDone(const grpc::Status& status) override {
    bool ours = false;
    {
      std::lock_guard lock(mutex_);
      ours = cancelled_;
    }
    std::exception_ptr error;
    if (!status.ok() && !ours) error = std::make_exception_ptr(error_of(status, "worker " + address_));
    handler_.on_closed(error);
    std::lock_guard lock(mutex_);
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  // Starts the next read unless one is in flight or the stream is closing.
  void read_again() {
    {
      std::lock_guard lock(mutex_);
      if (closing_ || reading_) return;
      reading_ = true;
    }
    StartRead(&incoming_);
  }

  // From here on no operation starts (closing_), so gRPC may end the call. Once.
  void release_hold() {
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
      if (hold_released_) return;
      hold_released_ = true;
    }
    RemoveHold();
  }

  const std::string address_;
  StreamHandler& handler_;
  grpc::ClientContext context_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  std::deque<grpc::ByteBuffer> outgoing_;
  grpc::ByteBuffer incoming_;
  bool writing_ = false, reading_ = false, closing_ = false, hold_released_ = false, done_ = false;
  bool cancelled_ = false;
};

class GrpcWorkerLink final : public WorkerLink {
 public:
  GrpcWorkerLink(const std::string& address, const LinkOptions& options)
      : address_(address),
        options_(options),
        channel_(make_channel(address, options, options.max_frame_bytes)),
        generic_(channel_),
        describe_(v1::Worker::NewStub(channel_)) {}

  std::unique_ptr<SplitStream> open(const v1::StreamOpen& open, StreamHandler& handler) override {
    return std::make_unique<GrpcSplitStream>(generic_, address_, open, handler);
  }

  v1::DescribeChainResponse describe_chain(const v1::DescribeChainRequest& request) override {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options_.call_timeout);
    v1::DescribeChainResponse response;
    const grpc::Status status = describe_->DescribeChain(&context, request, &response);
    if (!status.ok()) throw error_of(status, "worker " + address_ + ": DescribeChain");
    return response;
  }

 private:
  const std::string address_;
  const LinkOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub generic_;
  std::unique_ptr<v1::Worker::Stub> describe_;
};

}  // namespace

std::unique_ptr<WorkerLink> connect_worker(const std::string& address, const LinkOptions& options) {
  return std::make_unique<GrpcWorkerLink>(address, options);
}

std::unique_ptr<Server> serve_worker(WorkerCalls& calls, const std::string& listen, const Tls& tls,
                                     std::size_t stream_depth) {
  return std::make_unique<WorkerServer>(calls, listen, tls, stream_depth);
}

}  // namespace conveyor::service::detail
