#include "hw/run/local_control_group.h"

namespace fabtwin::hw {

// One collective call at a time: every rank deposits its bytes, the last one to arrive
// publishes the round, and each rank takes the published bytes before the next round opens.
struct LocalControlGroup::Shared {
  int ranks = 1;
  std::mutex mutex;
  std::condition_variable changed;
  uint64_t round = 0;
  int arrived = 0;
  int taken = 0;
  std::vector<std::vector<unsigned char>> deposits, published;
  std::string abandoned;  // why a rank gave up; empty while every rank is in

  void check() const {
    if (!abandoned.empty()) throw ControlError(abandoned);
  }

  std::vector<std::vector<unsigned char>> exchange(int rank, const std::vector<unsigned char>& b) {
    std::unique_lock lock(mutex);
    changed.wait(lock, [&] { return taken == 0 || !abandoned.empty(); });  // previous round taken
    check();
    const uint64_t mine = round;
    if (deposits.empty()) deposits.resize(static_cast<size_t>(ranks));
    deposits[static_cast<size_t>(rank)] = b;
    if (++arrived == ranks) {
      published = std::move(deposits);
      deposits.clear();
      arrived = 0;
      taken = ranks;
      ++round;
      changed.notify_all();
    } else {
      changed.wait(lock, [&] { return round != mine || !abandoned.empty(); });
      check();
    }
    std::vector<std::vector<unsigned char>> out = published;
    if (--taken == 0) changed.notify_all();
    return out;
  }
};

std::vector<std::unique_ptr<ControlGroup>> LocalControlGroup::create(int ranks) {
  auto shared = std::make_shared<Shared>();
  shared->ranks = ranks;
  std::vector<std::unique_ptr<ControlGroup>> out;
  for (int r = 0; r < ranks; ++r) out.emplace_back(new LocalControlGroup(shared, r));
  return out;
}

void LocalControlGroup::abandon(const std::string& why) {
  std::lock_guard lock(shared_->mutex);
  if (shared_->abandoned.empty()) {
    shared_->abandoned = "rank " + std::to_string(rank_) + " left the group: " + why;
  }
  shared_->changed.notify_all();
}

int LocalControlGroup::ranks() const {
  return shared_->ranks;
}

void LocalControlGroup::barrier() {
  shared_->exchange(rank_, {});
}

std::vector<unsigned char> LocalControlGroup::broadcast(const std::vector<unsigned char>& bytes,
                                                        int root) {
  return shared_->exchange(rank_, rank_ == root ? bytes : std::vector<unsigned char>{})
      .at(static_cast<size_t>(root));
}

std::vector<std::vector<unsigned char>> LocalControlGroup::allgather(
    const std::vector<unsigned char>& bytes) {
  return shared_->exchange(rank_, bytes);
}

std::vector<std::vector<unsigned char>> LocalControlGroup::gather(
    const std::vector<unsigned char>& bytes) {
  auto all = shared_->exchange(rank_, bytes);
  if (rank_ != 0) all.clear();
  return all;
}

}  // namespace fabtwin::hw
