// The threads that run the parallel runner's windows: persistent threads, started once per run,
// that wait for each window by spinning (the pause instruction), then yielding, then sleeping on
// a futex after a bound, so that an oversubscribed machine does not burn its cores. A window's
// items (partitions) are claimed one by one: each thread first takes its own (item i belongs to
// thread i mod threads, so a partition keeps its core while all threads keep up), then any left
// unclaimed. The caller runs items too and only waits for items that some thread has claimed,
// never for a thread the OS has not scheduled yet: a late thread finds nothing left to claim.
// Which thread runs an item does not change what the item computes, so results stay the same.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace fabtwin {

class WindowWorkers {
 public:
  using Work = std::function<void(size_t item)>;

  // `threads` in all (at most one per item): the caller and threads - 1 started here.
  WindowWorkers(int threads, size_t items, Work work);
  ~WindowWorkers();
  WindowWorkers(const WindowWorkers&) = delete;
  WindowWorkers& operator=(const WindowWorkers&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Runs work(item) once for every item, spread over the threads; returns when every item is
  // done. An exception thrown by an item is rethrown here (the lowest item's, if several).
  void run_window();

 private:
  struct alignas(64) Slot {
    std::atomic<uint32_t> claimed{0};  // the window that claimed the item last
    std::exception_ptr error;
  };
  struct alignas(64) Word {
    std::atomic<uint32_t> value{0};
    std::atomic<uint32_t> sleepers{0};  // threads asleep (or about to be) on `value`
  };

  void helper(int index);
  // Claims and runs the items of window `window` that are still unclaimed, own ones first.
  void take_items(int thread, uint32_t window);
  void finish_item();

  Work work_;
  std::unique_ptr<Slot[]> slots_;
  size_t items_;
  Word window_;     // the window being run (counts up from 1)
  Word remaining_;  // items of the current window not yet done
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace fabtwin
