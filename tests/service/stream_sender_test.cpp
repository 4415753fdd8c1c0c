// StreamSender: what a trainer sends on a worker stream before open() has returned it (the answer to the
// worker's offer of shared memory, answered on the transport's thread) goes on the stream once it is
// attached, in order; after detach() nothing goes anywhere. Without the first, a worker waited 2 s for an
// answer that was lost and sent that stream's batches through the socket
// (DataService.TwoWorkersDeliverEverySample... failed so, now and then, on a loaded host).
#include "src/service/client/stream_sender.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace conveyor::service::detail {
namespace {

// A stream that records what is sent on it.
class RecordingStream final : public SplitStream {
 public:
  void send(const v1::ClientMessage& message) override {
    std::lock_guard lock(mutex_);
    sent_.push_back(message);
  }
  void resume() override {}
  void cancel() override {}
  // The lent batch numbers of the releases sent, in order.
  std::vector<std::uint64_t> released() const {
    std::lock_guard lock(mutex_);
    std::vector<std::uint64_t> out;
    for (const v1::ClientMessage& message : sent_)
      if (message.has_release()) out.push_back(message.release().lent(0));
    return out;
  }
  std::size_t count() const {
    std::lock_guard lock(mutex_);
    return sent_.size();
  }
  const v1::ClientMessage& at(std::size_t i) const { return sent_.at(i); }

 private:
  mutable std::mutex mutex_;
  std::vector<v1::ClientMessage> sent_;
};

v1::ClientMessage release(std::uint64_t lent) {
  v1::ClientMessage message;
  message.mutable_release()->add_lent(lent);
  return message;
}

v1::ClientMessage answer(bool mapped) {
  v1::ClientMessage message;
  message.mutable_shared_memory()->set_mapped(mapped);
  return message;
}

TEST(StreamSender, WhatIsSentBeforeTheStreamIsAttachedGoesOnItThenInOrder) {
  StreamSender sender;
  RecordingStream stream;
  sender.send(answer(true));  // the worker's offer answered before open() returned
  sender.send(release(7));
  EXPECT_EQ(stream.count(), 0u);
  sender.attach(stream);
  ASSERT_EQ(stream.count(), 2u);
  EXPECT_TRUE(stream.at(0).has_shared_memory());
  EXPECT_TRUE(stream.at(0).shared_memory().mapped());
  EXPECT_EQ(stream.released(), std::vector<std::uint64_t>{7});
  sender.send(release(8));  // attached: straight on
  EXPECT_EQ(stream.released(), (std::vector<std::uint64_t>{7, 8}));
}

TEST(StreamSender, AfterDetachNothingIsSentAndNothingIsKept) {
  StreamSender sender;
  RecordingStream stream;
  sender.attach(stream);
  sender.send(release(1));
  sender.detach();
  sender.send(release(2));  // a frame released after the maker stopped
  EXPECT_EQ(stream.released(), std::vector<std::uint64_t>{1});
  RecordingStream other;
  sender.attach(other);  // a detached sender stays detached
  sender.send(release(3));
  EXPECT_EQ(other.count(), 0u);
  EXPECT_EQ(stream.count(), 1u);

  StreamSender never_attached;
  never_attached.send(release(4));
  never_attached.detach();
  never_attached.attach(other);
  EXPECT_EQ(other.count(), 0u) << "what was kept before detach() went out";
}

TEST(StreamSender, ATransportThreadSendingWhileTheStreamIsAttachedLosesNothingAndKeepsItsOrder) {
  // Under ThreadSanitizer too: the transport's thread sends while the opening thread attaches.
  for (int round = 0; round < 50; ++round) {
    StreamSender sender;
    RecordingStream stream;
    constexpr std::uint64_t kMessages = 200;
    std::thread transport([&] {
      for (std::uint64_t i = 0; i < kMessages; ++i) sender.send(release(i));
    });
    sender.attach(stream);
    transport.join();
    std::vector<std::uint64_t> expected(kMessages);
    for (std::uint64_t i = 0; i < kMessages; ++i) expected[i] = i;
    ASSERT_EQ(stream.released(), expected) << "round " << round;
  }
}

}  // namespace
}  // namespace conveyor::service::detail
