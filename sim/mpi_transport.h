// Transport over MPI (MPI_COMM_WORLD): the ranks started by mpirun each hold some partitions.
#pragma once

#include "sim/transport.h"

namespace fabtwin {

class MpiTransport final : public Transport {
 public:
  MpiTransport();
  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  std::vector<char> exchange(const std::vector<std::vector<char>>& outgoing) override;
  uint64_t sum(uint64_t v) override;
  int64_t sum(int64_t v) override;
  int64_t min(int64_t v) override;
  unsigned __int128 max(unsigned __int128 v) override;
  std::vector<std::string> gather(const std::string& text) override;

 private:
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace fabtwin
