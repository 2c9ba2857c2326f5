// A ControlGroup for tests whose "ranks" are threads of one process: the collective calls meet
// in shared memory. Every rank must call the same collectives in the same order, as over the
// network.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "hw/control/control_group.h"

namespace fabtwin::hw::test {

class InProcessHub {
 public:
  explicit InProcessHub(int ranks) : ranks_(ranks), slots_(ranks) {}
  int ranks() const { return ranks_; }

  // Every rank's contribution to this round, once all have given theirs.
  std::vector<std::vector<unsigned char>> exchange(int rank, std::vector<unsigned char> bytes) {
    std::unique_lock lock(mutex_);
    const long round = round_;
    slots_[rank] = std::move(bytes);
    if (++arrived_ == ranks_) {
      result_ = slots_;
      arrived_ = 0;
      ++round_;
      changed_.notify_all();
    } else {
      changed_.wait(lock, [&] { return round_ != round; });
    }
    return result_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int ranks_;
  int arrived_ = 0;
  long round_ = 0;
  std::vector<std::vector<unsigned char>> slots_, result_;
};

class InProcessControl : public ControlGroup {
 public:
  InProcessControl(std::shared_ptr<InProcessHub> hub, int rank)
      : hub_(std::move(hub)), rank_(rank) {}
  int rank() const override { return rank_; }
  int ranks() const override { return hub_->ranks(); }
  uint16_t bound_port() const override { return 0; }
  void barrier() override { hub_->exchange(rank_, {}); }
  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& bytes, int root) override {
    return hub_->exchange(rank_, bytes)[root];
  }
  std::vector<std::vector<unsigned char>> allgather(
      const std::vector<unsigned char>& bytes) override {
    return hub_->exchange(rank_, bytes);
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override {
    auto all = hub_->exchange(rank_, bytes);
    return rank_ == 0 ? all : std::vector<std::vector<unsigned char>>{};
  }

 private:
  std::shared_ptr<InProcessHub> hub_;
  int rank_;
};

}  // namespace fabtwin::hw::test
