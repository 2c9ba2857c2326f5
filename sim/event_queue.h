// Pending events of one partition: a calendar queue (timing wheel of short time buckets, each
// sorted when it is reached) with a heap for the far future. Pops in (time, key) order.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/event_heap.h"
#include "sim/sorting_network.h"

namespace fabtwin {

// Packet-level runs schedule almost every event a few nanoseconds to a few microseconds ahead,
// so a wheel of 16384 buckets of 2.048 ns (a 33.5 us horizon) holds nearly all of them: a push
// appends to its bucket, and a bucket is sorted once, when the clock reaches it (a handful of
// events). Later events wait in a heap and move onto the wheel as the horizon passes them.
//
// A bucket's events lie side by side in chunks of eight (four cache lines), chained from the
// newest, whose fill count sits beside the bucket's head (the older chunks are full); the
// chain's links are an array of their own, which stays in cache, where a link in the chunk's
// last line was read from memory for a newest chunk holding an event or two: draining a
// bucket reads a chunk or two, where a list of single events linked across the pool cost one
// dependent cache miss per event, and a push reads only the wheel's head array, whose live part
// (the next few microseconds) stays in cache. Chunks are recycled, so a steady run allocates
// nothing, and the pool holds about the run's peak of pending events.
//
// A bucket is sorted in place, as one 64-bit word per event: its time within the bucket, its
// source component and its index (where it lies in the bucket's chunks, in the order it
// arrived). The index orders a source's events as their sequence numbers do, because they reach a
// bucket in that order; each sort checks this, and sorts by the keys themselves if it ever fails.
// Up to 32 events (93% of the standard benchmark's events are in such buckets) are sorted by a
// branch-free sorting network, larger buckets by std::sort. The events stay in their chunks,
// which are freed when the next bucket becomes current, and are read through the sorted words.
// Sorting the 32-byte events themselves took as many instructions but ended every step of its
// insertion sort with a mispredicted branch (docs/performance.md, "The bucket sort").
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
    if (next_ == order_.size()) advance();
    return event_at(order_[next_]);
  }

  Event pop() {
    const Event e = top();
    ++next_;
    --size_;
    return e;
  }

  // The event `ahead` places after the one top() returned, if the current bucket has it (else
  // null). A hint for prefetching only: a push into the current bucket may change it.
  const Event* after_top(size_t ahead) const {
    return next_ + ahead < order_.size() ? &event_at(order_[next_ + ahead]) : nullptr;
  }

  // Removes the event top() returned last (no other call in between).
  void pop_top() {
    assert(next_ < order_.size());
    ++next_;
    --size_;
  }

  // Moves every event due before `limit` to the end of `out`, in no set order: the buckets that
  // end by `limit` as their events lie, unsorted, and the rest in (time, key) order. For a
  // runner that orders them itself (Simulator's bursts sort each component's events).
  void take_before(Time limit, std::vector<Event>& out) {
    for (; next_ < order_.size(); ++next_, --size_) {  // the rest of the bucket being drained
      const Event& e = event_at(order_[next_]);
      if (e.time >= limit) return;
      out.push_back(e);
    }
    // Bucket b ends by `limit` when (b + 1) << kBucketBits <= limit.
    const int64_t last_whole = (limit.ps >> kBucketBits) - 1;
    // Whole buckets go by faster than a line comes from memory: the newest chunk of the
    // occupied bucket kTakeAhead on is fetched as each is handed over.
    int64_t ahead = current_bucket_;
    const auto fetch_ahead = [&] {
      if (ahead == INT64_MAX) return;
      ahead = next_wheel_bucket(ahead);
      if (ahead > last_whole) {
        ahead = INT64_MAX;
        return;
      }
      prefetch_newest_chunk(ahead, heads_[slot_of(ahead)].count);  // the lines with events
    };
    for (int i = 0; i < kTakeAhead; ++i) fetch_ahead();
    while (size_ > 0) {
      const int64_t b = next_bucket();
      if (b > last_whole) break;
      const size_t n = make_current(b);
      fetch_ahead();
      for_each_current([&out](const Event& e, size_t) { out.push_back(e); });
      size_ -= n;  // drained: the next top() makes the next bucket current
    }
    for (; size_ > 0 && top().time < limit; pop_top()) out.push_back(top());
  }

  // Inlined into every schedule(): the call would cost more than the usual append.
  [[gnu::always_inline]] void push(const Event& e) {
    ++size_;
    const int64_t b = bucket_of(e);
    // current_bucket_ < b < current_bucket_ + kWheelSize, as one unsigned comparison.
    if (static_cast<uint64_t>(b - current_bucket_ - 1) < kWheelSize - 1) [[likely]] {
      put_on_wheel(b, e);
    } else {
      push_elsewhere(b, e);
    }
  }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr int kTakeAhead = 3;  // buckets
  static constexpr uint32_t kChunkEvents = 8;
  struct alignas(64) Chunk {
    Event events[kChunkEvents];
  };
  struct Head {
    uint32_t chunk;  // the bucket's newest chunk, or kNil
    uint32_t count;  // events in it
  };

  static int64_t bucket_of(const Event& e) { return e.time.ps >> kBucketBits; }
  static size_t slot_of(int64_t bucket) { return static_cast<size_t>(bucket & (kWheelSize - 1)); }

  // An event's index in the current bucket: 8 times its chunk's place in bucket_chunks_ plus
  // its place in the chunk, so that indices follow the order the events arrived in. Its sort
  // word (see the class comment): 11 bits of time within the bucket, 24 of source component,
  // 29 of index.
  static constexpr int kIndexBits = 64 - kBucketBits - (64 - kSequenceBits);
  static constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
  static_assert(kIndexBits == 29 && kChunkEvents <= 8);
  static uint64_t order_word(const Event& e, size_t index) {
    const auto within = static_cast<uint64_t>(e.time.ps) & ((uint64_t{1} << kBucketBits) - 1);
    return within << (64 - kBucketBits) | (e.key >> kSequenceBits) << kIndexBits | index;
  }
  // Indices have room for 2^26 chunks in one bucket (about 470 M events due within 2.048 ns).
  static void require_index_room(size_t chunks) {
    if (chunks * 8 > kIndexMask) {
      throw std::length_error("more than 2^26 chunks of events due in one 2.048 ns bucket");
    }
  }
  const Event& event_at(uint64_t word) const {
    const auto index = static_cast<uint32_t>(word & kIndexMask);
    return chunks_[bucket_chunks_[index >> 3]].events[index & 7];
  }
  // Calls f(event, index) for each event of the current bucket, in the order they arrived.
  template <class F>
  void for_each_current(F f) const {
    const size_t chunks = bucket_chunks_.size();
    for (size_t place = 0; place < chunks; ++place) {
      const Chunk& chunk = chunks_[bucket_chunks_[place]];
      const uint32_t count = place + 1 == chunks ? last_count_ : kChunkEvents;
      for (uint32_t i = 0; i < count; ++i) f(chunk.events[i], place * 8 + i);
    }
  }

  // Free chunks are kept as a stack of indices, not chained through the chunks: a chain made
  // each take wait for the free chunk's link line to come from memory (4.8% of the k=16 run's
  // samples on that one load), where a stack's top is in cache and the chunk is only written.
  uint32_t take_chunk() {
    if (free_.empty()) {
      chunks_.emplace_back();
      older_.push_back(kNil);
      return static_cast<uint32_t>(chunks_.size() - 1);
    }
    const uint32_t c = free_.back();
    free_.pop_back();
    return c;
  }

  // The pushes that do not go onto the wheel, out of line so that every schedule() inlines
  // only the common case.
  [[gnu::noinline]] void push_elsewhere(int64_t b, const Event& e) {
    if (b > current_bucket_) {
      far_.push(e);
      return;
    }
    // Due within the bucket being drained: appended to its chunks, and its index goes in order
    // among the events still to come (compared by key: an entry's index is all that is read
    // once the bucket is sorted).
    if (bucket_chunks_.empty() || last_count_ == kChunkEvents) {
      require_index_room(bucket_chunks_.size() + 1);
      const uint32_t c = take_chunk();
      bucket_chunks_.push_back(c);
      last_count_ = 0;
    }
    const auto index = static_cast<uint64_t>((bucket_chunks_.size() - 1) * 8 + last_count_);
    chunks_[bucket_chunks_.back()].events[last_count_++] = e;
    const auto it = std::upper_bound(
        order_.begin() + static_cast<std::ptrdiff_t>(next_), order_.end(), e,
        [this](const Event& x, uint64_t word) { return comes_before(x, event_at(word)); });
    order_.insert(it, index);
  }

  // A chunk for the front of `slot`'s chain.
  [[gnu::noinline]] void new_chunk(size_t slot) {
    const uint32_t c = take_chunk();
    Head& head = heads_[slot];
    if (head.chunk == kNil) occupied_[slot >> 6] |= uint64_t{1} << (slot & 63);
    older_[c] = head.chunk;
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

  // Sorts the current bucket's n words with the network for N >= n.
  template <size_t N>
  void sort_small() {
    std::array<uint64_t, N> words;
    size_t n = 0;
    for_each_current([&](const Event& e, size_t index) { words[n++] = order_word(e, index); });
    for (size_t i = n; i < N; ++i) words[i] = UINT64_MAX;  // sorted last
    sort_by_network<N>(words);
    order_.assign(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(N));
  }

  // The network a bucket of n events is sorted with: its own for 2 and 3 events, then the
  // next size in steps of 4 (sort_small() fills the places past n).
  static constexpr size_t kLargestNetwork = 32;
  static constexpr size_t network_size(size_t n) {
    return n < 4 ? std::max<size_t>(n, 2) : (n + 3) / 4 * 4;
  }
  template <size_t... N>
  static constexpr auto networks_by_size(std::index_sequence<N...>) {
    return std::array<void (EventQueue::*)(), sizeof...(N)>{
        &EventQueue::sort_small<network_size(N)>...};
  }

  // Orders the current bucket's n events: order_ lists their indices in (time, key) order.
  void sort_current(size_t n) {
    if (n == 1) {
      order_.assign(1, 0);
      return;
    }
    if (n <= kLargestNetwork) {
      static constexpr auto kNetworks =
          networks_by_size(std::make_index_sequence<kLargestNetwork + 1>{});
      (this->*kNetworks[n])();
    } else {
      order_.resize(n);
      size_t at = 0;
      for_each_current([&](const Event& e, size_t index) { order_[at++] = order_word(e, index); });
      std::sort(order_.begin(), order_.end());
    }
    order_.resize(n);  // without a network's unused places
    // Events of one source at one time: their indices must follow their keys.
    for (size_t i = 1; i < n; ++i) {
      if (((order_[i] ^ order_[i - 1]) >> kIndexBits) == 0 &&
          comes_before(event_at(order_[i]), event_at(order_[i - 1]))) [[unlikely]] {
        std::sort(order_.begin(), order_.end(), [this](uint64_t a, uint64_t b) {
          return comes_before(event_at(a), event_at(b));
        });
        return;
      }
    }
  }

  // The next non-empty bucket after the current one (a wheel slot or the far heap's first).
  int64_t next_bucket() const {
    const int64_t wheel_next = next_wheel_bucket(current_bucket_);
    const int64_t far_next = far_.empty() ? INT64_MAX : bucket_of(far_.top());
    return std::min(wheel_next, far_next);
  }

  // Makes bucket `b` (the next non-empty one) current, unsorted; returns its event count.
  size_t make_current(int64_t b) {
    // The drained bucket's chunks join the free list.
    free_.insert(free_.end(), bucket_chunks_.begin(), bucket_chunks_.end());
    bucket_chunks_.clear();
    order_.clear();
    next_ = 0;
    current_bucket_ = b;
    // The horizon moved: far events now within it join the wheel, this bucket included.
    while (!far_.empty() && bucket_of(far_.top()) < current_bucket_ + kWheelSize) {
      const Event e = far_.pop();
      put_on_wheel(bucket_of(e), e);
    }
    // The bucket's chain (newest chunk first) becomes its chunks, oldest first.
    const size_t slot = slot_of(current_bucket_);
    for (uint32_t c = heads_[slot].chunk; c != kNil; c = older_[c]) {
      bucket_chunks_.push_back(c);
    }
    std::reverse(bucket_chunks_.begin(), bucket_chunks_.end());
    require_index_room(bucket_chunks_.size());
    last_count_ = heads_[slot].count;
    const size_t n = (bucket_chunks_.size() - 1) * kChunkEvents + last_count_;
    heads_[slot] = {kNil, 0};
    occupied_[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    on_wheel_ -= n;
    return n;
  }

  // Makes the next non-empty bucket current and sorts it.
  void advance() {
    const size_t n = make_current(next_bucket());
    sort_current(n);
    for_each_current([](const Event& e, size_t) { prefetch_payload(e); });
    const int64_t next = next_wheel_bucket(current_bucket_);
    if (next == INT64_MAX) return;
    uint32_t count = heads_[slot_of(next)].count;
    for (uint32_t c = heads_[slot_of(next)].chunk; c != kNil; c = older_[c]) {
      for (uint32_t i = 0; i < count; ++i) prefetch_payload(chunks_[c].events[i]);
      count = kChunkEvents;
    }
    const int64_t then = next_wheel_bucket(next);
    if (then != INT64_MAX) prefetch_newest_chunk(then, kChunkEvents);
  }

  // The lines of the first `events` places of bucket b's newest chunk; b must be on the wheel
  // and occupied.
  void prefetch_newest_chunk(int64_t b, uint32_t events) const {
    const auto* newest = reinterpret_cast<const char*>(&chunks_[heads_[slot_of(b)].chunk]);
    for (size_t at = 0; at < events * sizeof(Event); at += 64) __builtin_prefetch(newest + at);
  }

  // The bucket being drained: its chunks, oldest first, the events in the last of them, and
  // the sort words of its events (an index in the low bits), sorted; next_ is the next word.
  std::vector<uint32_t> bucket_chunks_;
  uint32_t last_count_ = 0;
  std::vector<uint64_t> order_;
  size_t next_ = 0;
  int64_t current_bucket_ = -1;
  std::vector<Chunk> chunks_;    // wheel entries
  std::vector<uint32_t> older_;  // [chunk]: the bucket's older (full) chunk, or kNil
  std::vector<uint32_t> free_;   // free chunks, the last freed on top
  std::array<Head, kWheelSize> heads_;
  std::array<uint64_t, kWheelSize / 64> occupied_{};
  size_t on_wheel_ = 0;
  EventHeap far_;
  size_t size_ = 0;
};

}  // namespace fabtwin
