// The threads that run the parallel runner's windows: persistent threads, started once per run,
// that wait for each window by spinning (the pause instruction), then yielding, then sleeping on
// a futex after a bound, so that an oversubscribed machine does not burn its cores. A window's
// items (partitions) are claimed one by one: each thread first takes its own (item i belongs to
// thread i mod threads, so a partition keeps its core while all threads keep up), then any left
// unclaimed. The thread that claims an item prepares it, which tells how many tasks it has this
// window (the groups of a partition's bursts), and then claims its tasks one by one; a thread
// with no item left claims tasks of the others' items (work stealing), so that a window ends
// when the work ends, not when the slowest item's thread does. The caller runs items too and
// only waits for work some thread has claimed, never for a thread the OS has not scheduled yet: a
// late thread finds nothing left to claim. Which thread runs an item or a task does not change
// what it computes (the runner's contract), so results stay the same.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fabtwin {

class WindowWorkers {
 public:
  // Prepares item `item` for the window, on the thread that claimed it, and returns its number
  // of tasks (at most kMaxTasks).
  using Prepare = std::function<uint32_t(size_t item)>;
  // Runs task `task` of item `item` on thread `thread` (0 = the caller), which prepared the
  // item (`own`) or took the task from another's (then not at the same time as any other task
  // on that thread).
  using Task = std::function<void(size_t item, uint32_t task, int thread, bool own)>;
  using Work = std::function<void(size_t item)>;
  static constexpr uint32_t kMaxTasks = 0xFFFF;

  // `threads` in all (at most one per item): the caller and threads - 1 started here.
  WindowWorkers(int threads, size_t items, Prepare prepare, Task task);
  // Items without tasks: work(item) once per item and window.
  WindowWorkers(int threads, size_t items, Work work);
  ~WindowWorkers();
  WindowWorkers(const WindowWorkers&) = delete;
  WindowWorkers& operator=(const WindowWorkers&) = delete;

  int threads() const { return static_cast<int>(helpers_.size()) + 1; }

  // Prepares every item and runs every task once, spread over the threads; returns when all
  // are done. An exception thrown by a preparation or a task is rethrown here (if several, the
  // lowest item's, and within it the preparation's or the lowest task's).
  void run_window();

 private:
  struct alignas(64) Slot {
    std::atomic<uint32_t> claimed{0};  // the window that claimed the item last
    // The window's tasks once prepared: (window << 32) | (tasks << 16) | next task to claim.
    std::atomic<uint64_t> tasks{0};
    // Tasks not yet done, plus one while being claimed. On a line of its own: a thread looking
    // for tasks reads the line above, and every finished task would take it from that thread.
    alignas(64) std::atomic<uint32_t> unfinished{0};
  };
  struct alignas(64) Word {
    std::atomic<uint32_t> value{0};
    std::atomic<uint32_t> sleepers{0};  // threads asleep (or about to be) on `value`
  };

  void helper(int index);
  // Claims and runs the items of window `window` that are still unclaimed, own ones first,
  // then tasks of the others' items while any are left.
  void take_items(int thread, uint32_t window);
  // Claims the next task of item `i` in window `window` and runs it; false if none is left (or
  // the item is not prepared yet: then `unprepared` is set).
  bool run_next_task(size_t i, uint32_t window, int thread, bool own, bool* unprepared = nullptr);
  // One task (or the claiming of an item's tasks) of item `i` is over.
  void finish(size_t i);
  void record_error(size_t item, int64_t task);

  Prepare prepare_;
  Task task_;
  std::unique_ptr<Slot[]> slots_;
  size_t items_;
  Word window_;     // the window being run (counts up from 1)
  Word remaining_;  // items of the current window not yet done
  std::atomic<bool> stop_{false};
  std::mutex errors_mutex_;
  struct Error {
    size_t item;
    int64_t task;  // -1: the preparation
    std::exception_ptr error;
  };
  std::vector<Error> errors_;
  std::vector<std::thread> helpers_;
};

}  // namespace fabtwin
