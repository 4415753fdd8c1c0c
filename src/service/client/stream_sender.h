// What a trainer sends on one worker stream besides its split requests: the answer to the worker's offer of
// shared memory, and the releases of lent batches. Frames still held may outlive the maker that opened the
// stream, so they hold this rather than the stream.
//
// The worker's first frame, its offer, can arrive and be answered on the transport's thread before open()
// has returned the stream. What is sent before attach() is kept and sent then, in order: it was lost before,
// and the worker, waiting for an answer that never came, sent every batch of that stream through the socket.
// After detach() (the maker stopped: the worker's side is over) nothing is sent.
#pragma once

#include <mutex>
#include <vector>

#include "src/service/transport/links.h"

namespace conveyor::service::detail {

class StreamSender {
 public:
  void send(const v1::ClientMessage& message) {
    std::lock_guard lock(mutex_);
    if (stream_ != nullptr)
      stream_->send(message);
    else if (!detached_)
      early_.push_back(message);
  }

  // The stream open() returned: what was sent before goes on it now.
  void attach(SplitStream& stream) {
    std::lock_guard lock(mutex_);
    if (detached_) return;
    stream_ = &stream;
    for (const v1::ClientMessage& message : early_) stream_->send(message);
    early_.clear();
  }

  void detach() {
    std::lock_guard lock(mutex_);
    detached_ = true;
    stream_ = nullptr;
    early_.clear();
  }

 private:
  std::mutex mutex_;
  SplitStream* stream_ = nullptr;
  bool detached_ = false;
  std::vector<v1::ClientMessage> early_;
};

}  // namespace conveyor::service::detail
