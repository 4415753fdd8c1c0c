// Where a sample's pixels, and its mask alike, live while ops transform them: two scratch buffers that an op
// alternates between (it reads the current one while writing the other), and the sample's slot in a batch
// buffer, which the last op writes straight into so that batching copies nothing.
#pragma once

#include <string>

#include "conveyor/error.h"

namespace conveyor::detail {

// Buffer: an owning, reshapeable buffer (Image, Mask) whose view() gives View / ConstView of its Shape.
template <class Buffer, class View, class ConstView, class Shape>
class PingPongBuffer {
 public:
  // The current contents; empty before the first op that produces them.
  ConstView current() const noexcept {
    if (current_ == kSlot) return slot_;
    if (current_ == kNone) return {};
    return scratch_[current_].view();
  }
  View mutable_current() noexcept {
    if (current_ == kSlot) return slot_;
    if (current_ == kNone) return {};
    return scratch_[current_].view();
  }

  // Where an op that produces contents of `shape` writes them: the slot when `shape` is its shape (and the
  // contents do not live there already), else the scratch buffer not holding the current contents.
  // `caller` names the public call in the error for an empty shape.
  View output(Shape shape, const char* caller) {
    if (shape.empty()) throw InvalidArgument(std::string(caller) + ": empty shape");
    if (!slot_.empty() && current_ != kSlot && shape == slot_.shape()) {
      pending_ = kSlot;
      return slot_;
    }
    pending_ = current_ == 0 ? 1 : 0;
    scratch_[pending_].reshape(shape);
    return scratch_[pending_].view();
  }
  // Makes what output() last handed out the current contents; `misuse` is the error without an output().
  void publish(const char* misuse) {
    if (pending_ == kNone) throw InvalidArgument(misuse);
    current_ = pending_;
    pending_ = kNone;
  }
  // Forgets an output() that will not be published (the contents go elsewhere).
  void drop_pending() noexcept { pending_ = kNone; }

  bool in_slot() const noexcept { return current_ == kSlot; }
  bool holds_contents() const noexcept { return current_ != kNone; }
  void bind_slot(View slot) noexcept { slot_ = slot; }
  View slot() const noexcept { return slot_; }

  // Empty again, the scratch buffers' memory kept for the next sample.
  void clear() noexcept {
    scratch_[0].clear();
    scratch_[1].clear();
    slot_ = {};
    current_ = pending_ = kNone;
  }

 private:
  static constexpr int kNone = -1, kSlot = 2;
  Buffer scratch_[2];
  View slot_;
  int current_ = kNone;
  int pending_ = kNone;
};

}  // namespace conveyor::detail
