// The control group of ranks that share one process (threads): the same collective calls as
// the network's ControlGroup, through shared memory. A job of one process uses it with one
// rank (no network, no token); the tests run several ranks in threads with it.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hw/control/control_group.h"

namespace fabtwin::hw {

class LocalControlGroup : public ControlGroup {
 public:
  // One member per rank, all sharing state; member r is used by rank r's thread.
  static std::vector<std::unique_ptr<ControlGroup>> create(int ranks);

  int rank() const override { return rank_; }
  int ranks() const override;
  uint16_t bound_port() const override { return 0; }
  void barrier() override;
  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& bytes,
                                       int root = 0) override;
  std::vector<std::vector<unsigned char>> allgather(
      const std::vector<unsigned char>& bytes) override;
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override;

  // This rank gives up (its thread failed): every call of every rank, waiting or later, throws
  // ControlError naming it and `why`, as a network group's deadline would end the others.
  void abandon(const std::string& why);

  struct Shared;

 private:
  LocalControlGroup(std::shared_ptr<Shared> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}
  std::shared_ptr<Shared> shared_;
  int rank_;
};

}  // namespace fabtwin::hw
