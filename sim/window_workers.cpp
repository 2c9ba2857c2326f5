#include "sim/window_workers.h"

#include <algorithm>
#include <utility>

namespace fabtwin {

namespace {

// How long a waiting thread spins before it yields, and yields before it sleeps. A window of the
// standard benchmark takes tens of microseconds, so a thread that keeps up never sleeps; one
// that waits longer (the machine is oversubscribed, or the run is between phases) stops using
// the core.
constexpr int kSpins = 4096;
constexpr int kYields = 64;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

// Waits until `done(value)`. A sleeper announces itself before it looks at the value a last
// time, and a writer looks for sleepers after it writes (both sequentially consistent), so
// either the sleeper sees the new value or the writer sees the sleeper and wakes it.
template <class Done>
static void wait_for(std::atomic<uint32_t>& value, std::atomic<uint32_t>& sleepers, Done done) {
  for (int round = 0;; ++round) {
    const uint32_t seen = value.load(std::memory_order_acquire);
    if (done(seen)) return;
    if (round < kSpins) {
      cpu_relax();
    } else if (round < kSpins + kYields) {
      std::this_thread::yield();
    } else {
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      if (value.load(std::memory_order_seq_cst) == seen)
        value.wait(seen, std::memory_order_seq_cst);
      sleepers.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

WindowWorkers::WindowWorkers(int threads, size_t items, Prepare prepare, Task task)
    : prepare_(std::move(prepare)),
      task_(std::move(task)),
      slots_(std::make_unique<Slot[]>(items)),
      items_(items) {
  const int count = std::clamp(threads, 1, static_cast<int>(std::max<size_t>(1, items)));
  helpers_.reserve(static_cast<size_t>(count - 1));
  for (int i = 1; i < count; ++i) helpers_.emplace_back([this, i] { helper(i); });
}

WindowWorkers::WindowWorkers(int threads, size_t items, Work work)
    : WindowWorkers(
          threads, items,
          [work = std::move(work)](size_t item) {
            work(item);
            return uint32_t{0};
          },
          [](size_t, uint32_t, int, bool) {}) {}

WindowWorkers::~WindowWorkers() {
  stop_.store(true, std::memory_order_seq_cst);
  window_.value.fetch_add(1, std::memory_order_seq_cst);
  window_.value.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void WindowWorkers::helper(int index) {
  uint32_t seen = 0;
  for (;;) {
    wait_for(window_.value, window_.sleepers, [seen](uint32_t w) { return w != seen; });
    // The window first, then the stop. The destructor sets stop_ before it moves the window on
    // (both sequentially consistent), so a window read after that move comes with the stop. In
    // the other order a thread could pass the stop, then read the destructor's move as a window
    // to run: it claimed the items again, ran their work after the run had ended, and then
    // waited for a window that never came while the destructor waited for it.
    seen = window_.value.load(std::memory_order_seq_cst);
    if (stop_.load(std::memory_order_seq_cst)) return;
    take_items(index, seen);
  }
}

void WindowWorkers::record_error(size_t item, int64_t task) {
  const std::lock_guard lock(errors_mutex_);
  errors_.push_back({item, task, std::current_exception()});
}

void WindowWorkers::finish(size_t i) {
  if (slots_[i].unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
      remaining_.value.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      remaining_.sleepers.load(std::memory_order_seq_cst) != 0) {
    remaining_.value.notify_all();
  }
}

bool WindowWorkers::run_next_task(size_t i, uint32_t window, int thread, bool own,
                                  bool* unprepared) {
  std::atomic<uint64_t>& tasks = slots_[i].tasks;
  uint64_t seen = tasks.load(std::memory_order_acquire);
  for (;;) {
    // Tasks of another window (one not yet prepared, or a window already over) are not ours.
    if (static_cast<uint32_t>(seen >> 32) != window) {
      if (unprepared != nullptr) *unprepared = true;
      return false;
    }
    const auto next = static_cast<uint32_t>(seen & kMaxTasks);
    if (next >= static_cast<uint32_t>((seen >> 16) & kMaxTasks)) return false;
    if (tasks.compare_exchange_weak(seen, seen + 1, std::memory_order_acq_rel,
                                    std::memory_order_acquire)) {
      try {
        task_(i, next, thread, own);
      } catch (...) {
        record_error(i, next);
      }
      finish(i);
      return true;
    }
  }
}

void WindowWorkers::take_items(int thread, uint32_t window) {
  const auto stride = static_cast<size_t>(threads());
  auto try_item = [&](size_t i) {
    // An item is claimed once per window, from the window before: a thread that woke up late,
    // for a window already done, claims nothing.
    uint32_t expected = window - 1;
    Slot& slot = slots_[i];
    if (slot.claimed.load(std::memory_order_relaxed) != expected ||
        !slot.claimed.compare_exchange_strong(expected, window, std::memory_order_acq_rel)) {
      return;
    }
    uint32_t count = 0;
    try {
      count = std::min(prepare_(i), kMaxTasks);
    } catch (...) {
      record_error(i, -1);
    }
    // Published with the window's number: from here on any thread may claim the tasks.
    slot.unfinished.store(count + 1, std::memory_order_relaxed);
    slot.tasks.store(static_cast<uint64_t>(window) << 32 | static_cast<uint64_t>(count) << 16,
                     std::memory_order_release);
    while (run_next_task(i, window, thread, true)) {
    }
    finish(i);
  };
  const auto own = static_cast<size_t>(thread);
  for (size_t i = own; i < items_; i += stride) try_item(i);
  for (size_t i = 0; i < items_; ++i) {
    if (i % stride != own) try_item(i);
  }
  // Every item is claimed: take the tasks the others have not reached yet. Once every item is
  // prepared and none has a task left, no more will come this window: the thread stops looking
  // (and so stops reading the lines the items' threads write); until then it looks again, a
  // bounded while none is left to take, as in wait_for.
  for (int idle = 0; idle < kSpins && remaining_.value.load(std::memory_order_acquire) != 0;) {
    bool ran = false;
    bool unprepared = false;
    for (size_t k = 1; k <= items_; ++k) {
      while (run_next_task((own + k) % items_, window, thread, false, &unprepared)) ran = true;
    }
    if (ran) {
      idle = 0;
    } else if (!unprepared) {
      break;
    } else {
      ++idle;
      cpu_relax();
    }
  }
}

void WindowWorkers::run_window() {
  remaining_.value.store(static_cast<uint32_t>(items_), std::memory_order_relaxed);
  const uint32_t window = window_.value.load(std::memory_order_relaxed) + 1;
  window_.value.store(window, std::memory_order_seq_cst);
  if (window_.sleepers.load(std::memory_order_seq_cst) != 0) window_.value.notify_all();
  take_items(0, window);
  wait_for(remaining_.value, remaining_.sleepers, [](uint32_t left) { return left == 0; });
  const std::lock_guard lock(errors_mutex_);
  if (errors_.empty()) return;
  const Error first = *std::min_element(errors_.begin(), errors_.end(), [](auto& a, auto& b) {
    return std::pair(a.item, a.task) < std::pair(b.item, b.task);
  });
  errors_.clear();
  std::rethrow_exception(first.error);
}

}  // namespace fabtwin
