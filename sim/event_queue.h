// Pending events of one partition: a calendar queue (timing wheel of short time buckets, each
// sorted when it is reached) with a heap for the far future. Pops in (time, key) order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstdint>
#include <vector>

#include "sim/event_heap.h"

namespace fabtwin {

// Packet-level runs schedule almost every event a few nanoseconds to a few microseconds ahead,
// so a wheel of 16384 buckets of 2.048 ns (a 33.5 us horizon) holds nearly all of them: a push
// links a node into its bucket's list, and a bucket is sorted once, when the clock reaches it
// (a handful of events). Later events wait in a heap and move onto the wheel as the horizon
// passes them. Nodes are recycled, so a steady run allocates nothing.
class EventQueue {
 public:
  static constexpr int kBucketBits = 11;  // 2^11 ps (2.048 ns) per bucket
  static constexpr int kWheelBits = 14;   // 2^14 buckets on the wheel
  static constexpr int64_t kWheelSize = int64_t{1} << kWheelBits;

  EventQueue() { heads_.fill(kNil); }

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  // The earliest event; the queue must not be empty.
  const Event& top() {
    assert(size_ > 0);
    if (next_ == current_.size()) advance();
    return current_[next_];
  }

  Event pop() {
    const Event e = top();
    ++next_;
    --size_;
    return e;
  }

  // Removes the event top() returned last (no other call in between).
  void pop_top() {
    assert(next_ < current_.size());
    ++next_;
    --size_;
  }

  // Inlined into every schedule(): the call would cost more than the usual append.
  [[gnu::always_inline]] void push(const Event& e) {
    ++size_;
    const int64_t b = bucket_of(e);
    if (b > current_bucket_ && b < current_bucket_ + kWheelSize) [[likely]] {
      put_on_wheel(b, e);
    } else {
      push_elsewhere(b, e);
    }
  }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    Event event;
    uint32_t next;
  };

  static int64_t bucket_of(const Event& e) { return e.time.ps >> kBucketBits; }

  // The pushes that do not go onto the wheel, out of line so that every schedule() inlines
  // only the common case.
  [[gnu::noinline]] void push_elsewhere(int64_t b, const Event& e) {
    if (b <= current_bucket_) {
      // Due within the bucket being drained: insert in order among the events still to come.
      const auto it = std::upper_bound(current_.begin() + static_cast<std::ptrdiff_t>(next_),
                                       current_.end(), e, EventOrder{});
      current_.insert(it, e);
    } else {
      far_.push(e);
    }
  }

  [[gnu::noinline]] uint32_t new_node() {
    nodes_.push_back({});
    return static_cast<uint32_t>(nodes_.size() - 1);
  }

  [[gnu::always_inline]] void put_on_wheel(int64_t bucket, const Event& e) {
    uint32_t n = free_;
    if (n == kNil) [[unlikely]] {
      n = new_node();
    } else {
      free_ = nodes_[n].next;
    }
    const auto slot = static_cast<size_t>(bucket & (kWheelSize - 1));
    nodes_[n] = {e, heads_[slot]};
    heads_[slot] = n;
    occupied_[slot >> 6] |= uint64_t{1} << (slot & 63);
    ++on_wheel_;
  }

  // Next occupied wheel slot after the current bucket, as an absolute bucket number.
  int64_t next_wheel_bucket() const {
    if (on_wheel_ == 0) return INT64_MAX;
    const auto start = static_cast<size_t>((current_bucket_ + 1) & (kWheelSize - 1));
    for (int64_t step = 0; step < kWheelSize;) {
      const size_t slot = (start + static_cast<size_t>(step)) & (kWheelSize - 1);
      const uint64_t word = occupied_[slot >> 6] >> (slot & 63);
      if (word != 0) {
        const int skip = std::countr_zero(word);
        return current_bucket_ + 1 + step + skip;
      }
      step += 64 - static_cast<int64_t>(slot & 63);
    }
    return INT64_MAX;
  }

  // Makes the next non-empty bucket current and sorts it.
  void advance() {
    current_.clear();
    next_ = 0;
    const int64_t wheel_next = next_wheel_bucket();
    const int64_t far_next = far_.empty() ? INT64_MAX : bucket_of(far_.top());
    current_bucket_ = std::min(wheel_next, far_next);
    if (wheel_next == current_bucket_) {
      const auto slot = static_cast<size_t>(current_bucket_ & (kWheelSize - 1));
      // The list runs from the last push to the first; the whole of it joins the free list.
      uint32_t last = kNil;
      for (uint32_t n = heads_[slot]; n != kNil; n = nodes_[n].next) {
        current_.push_back(nodes_[n].event);
        last = n;
      }
      nodes_[last].next = free_;
      free_ = heads_[slot];
      heads_[slot] = kNil;
      occupied_[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
      on_wheel_ -= current_.size();
    }
    // The horizon moved: far events now within it join the wheel (or this bucket).
    while (!far_.empty() && bucket_of(far_.top()) < current_bucket_ + kWheelSize) {
      const Event e = far_.pop();
      const int64_t b = bucket_of(e);
      if (b == current_bucket_) {
        current_.push_back(e);
      } else {
        put_on_wheel(b, e);
      }
    }
    std::sort(current_.begin(), current_.end(), EventOrder{});
  }

  std::vector<Event> current_;  // the bucket being drained, sorted; next_ is its next event
  size_t next_ = 0;
  int64_t current_bucket_ = -1;
  std::vector<Node> nodes_;  // wheel entries; free ones are chained from free_
  uint32_t free_ = kNil;
  std::array<uint32_t, kWheelSize> heads_;  // first node of each bucket, or kNil
  std::array<uint64_t, kWheelSize / 64> occupied_{};
  size_t on_wheel_ = 0;
  EventHeap far_;
  size_t size_ = 0;
};

}  // namespace fabtwin
