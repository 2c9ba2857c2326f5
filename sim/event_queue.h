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
// appends to its bucket, and a bucket is sorted once, when the clock reaches it (a handful of
// events). Later events wait in a heap and move onto the wheel as the horizon passes them.
//
// A bucket's events lie side by side in chunks of seven (four cache lines), chained from the
// newest, whose fill count sits beside the bucket's head (the older chunks are full): draining a
// bucket reads a chunk or two, where a list of single events linked across the pool cost one
// dependent cache miss per event, and a push reads only the wheel's head array, whose live part
// (the next few microseconds) stays in cache. Chunks are recycled, so a steady run allocates
// nothing, and the pool holds about the run's peak of pending events.
//
// Prefetching runs as a pipeline over the occupied buckets: when a bucket becomes current, the
// payloads of the next one's events that carry kPrefetchPayload are prefetched (its chunks were
// prefetched one step earlier), and the newest chunk of the one after it; a handler then finds
// its packet in cache.
class EventQueue {
 public:
  static constexpr int kBucketBits = 11;  // 2^11 ps (2.048 ns) per bucket
  static constexpr int kWheelBits = 14;   // 2^14 buckets on the wheel
  static constexpr int64_t kWheelSize = int64_t{1} << kWheelBits;

  EventQueue() { heads_.fill({kNil, 0}); }

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
  static constexpr uint32_t kChunkEvents = 7;
  struct alignas(64) Chunk {
    Event events[kChunkEvents];
    uint32_t next;  // the bucket's older (full) chunk, or the next free one
  };
  struct Head {
    uint32_t chunk;  // the bucket's newest chunk, or kNil
    uint32_t count;  // events in it
  };

  static int64_t bucket_of(const Event& e) { return e.time.ps >> kBucketBits; }
  static size_t slot_of(int64_t bucket) { return static_cast<size_t>(bucket & (kWheelSize - 1)); }

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

  // A chunk for the front of `slot`'s chain.
  [[gnu::noinline]] void new_chunk(size_t slot) {
    uint32_t c = free_;
    if (c == kNil) {
      chunks_.emplace_back();
      c = static_cast<uint32_t>(chunks_.size() - 1);
    } else {
      free_ = chunks_[c].next;
    }
    Head& head = heads_[slot];
    if (head.chunk == kNil) occupied_[slot >> 6] |= uint64_t{1} << (slot & 63);
    chunks_[c].next = head.chunk;
    head = {c, 0};
  }

  [[gnu::always_inline]] void put_on_wheel(int64_t bucket, const Event& e) {
    const size_t slot = slot_of(bucket);
    Head& head = heads_[slot];
    if (head.chunk == kNil || head.count == kChunkEvents) [[unlikely]]
      new_chunk(slot);
    chunks_[head.chunk].events[head.count++] = e;
    ++on_wheel_;
  }

  // Next occupied wheel slot after bucket `after`, as an absolute bucket number.
  int64_t next_wheel_bucket(int64_t after) const {
    if (on_wheel_ == 0) return INT64_MAX;
    const size_t start = slot_of(after + 1);
    for (int64_t step = 0; step < kWheelSize;) {
      const size_t slot = (start + static_cast<size_t>(step)) & (kWheelSize - 1);
      const uint64_t word = occupied_[slot >> 6] >> (slot & 63);
      if (word != 0) {
        const int skip = std::countr_zero(word);
        const int64_t b = after + 1 + step + skip;
        return b < current_bucket_ + kWheelSize ? b : INT64_MAX;
      }
      step += 64 - static_cast<int64_t>(slot & 63);
    }
    return INT64_MAX;
  }

  static void prefetch_payload(const Event& e) {
    if (e.kind & kPrefetchPayload) __builtin_prefetch(reinterpret_cast<const void*>(e.data));
  }

  // Makes the next non-empty bucket current and sorts it.
  void advance() {
    current_.clear();
    next_ = 0;
    const int64_t wheel_next = next_wheel_bucket(current_bucket_);
    const int64_t far_next = far_.empty() ? INT64_MAX : bucket_of(far_.top());
    current_bucket_ = std::min(wheel_next, far_next);
    if (wheel_next == current_bucket_) {
      const size_t slot = slot_of(current_bucket_);
      // The whole chain joins the free list.
      uint32_t c = heads_[slot].chunk;
      for (uint32_t count = heads_[slot].count;; count = kChunkEvents) {
        const Chunk& chunk = chunks_[c];
        current_.insert(current_.end(), chunk.events, chunk.events + count);
        if (chunk.next == kNil) break;
        c = chunk.next;
      }
      chunks_[c].next = free_;
      free_ = heads_[slot].chunk;
      heads_[slot] = {kNil, 0};
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
    for (const Event& e : current_) prefetch_payload(e);
    const int64_t next = next_wheel_bucket(current_bucket_);
    if (next == INT64_MAX) return;
    uint32_t count = heads_[slot_of(next)].count;
    for (uint32_t c = heads_[slot_of(next)].chunk; c != kNil; c = chunks_[c].next) {
      for (uint32_t i = 0; i < count; ++i) prefetch_payload(chunks_[c].events[i]);
      count = kChunkEvents;
    }
    const int64_t then = next_wheel_bucket(next);
    if (then == INT64_MAX) return;
    const auto* newest = reinterpret_cast<const char*>(&chunks_[heads_[slot_of(then)].chunk]);
    for (size_t line = 0; line < sizeof(Chunk); line += 64) __builtin_prefetch(newest + line);
  }

  std::vector<Event> current_;  // the bucket being drained, sorted; next_ is its next event
  size_t next_ = 0;
  int64_t current_bucket_ = -1;
  std::vector<Chunk> chunks_;  // wheel entries; free ones are chained from free_
  uint32_t free_ = kNil;
  std::array<Head, kWheelSize> heads_;
  std::array<uint64_t, kWheelSize / 64> occupied_{};
  size_t on_wheel_ = 0;
  EventHeap far_;
  size_t size_ = 0;
};

}  // namespace fabtwin
