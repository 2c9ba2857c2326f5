// A 4-ary min-heap of events in (time, key) order: the event queue's far-future overflow and
// the reference the queue is tested against.
#pragma once

#include <cassert>
#include <cstddef>
#include <vector>

#include "sim/event.h"

namespace fabtwin {

// A 4-ary heap: shallower than a binary heap and its four children share a cache line pair,
// which is what the hot loop pays for. Events are copied in and out; nothing allocates once
// the vector has grown to the run's peak size.
class EventHeap {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const {
    assert(!heap_.empty());
    return heap_.front();
  }
  void reserve(size_t n) { heap_.reserve(n); }

  void push(const Event& e) {
    size_t i = heap_.size();
    heap_.push_back(e);
    while (i > 0) {
      const size_t parent = (i - 1) / 4;
      if (!comes_before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }

  Event pop() {
    assert(!heap_.empty());
    const Event result = heap_.front();
    const Event last = heap_.back();
    heap_.pop_back();
    const size_t n = heap_.size();
    if (n == 0) return result;
    size_t i = 0;
    for (;;) {
      const size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t end = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < end; ++c) {
        if (comes_before(heap_[c], heap_[best])) best = c;
      }
      if (!comes_before(heap_[best], last)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = last;
    return result;
  }

 private:
  std::vector<Event> heap_;
};

}  // namespace fabtwin
