#include "sim/mpi_transport.h"

#include <mpi.h>

#include <numeric>

namespace fabtwin {

MpiTransport::MpiTransport() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
}

std::vector<char> MpiTransport::exchange(const std::vector<std::vector<char>>& outgoing) {
  std::vector<int> send_counts(ranks_), recv_counts(ranks_), send_at(ranks_), recv_at(ranks_);
  for (int r = 0; r < ranks_; ++r) send_counts[r] = static_cast<int>(outgoing[r].size());
  MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::vector<char> send;
  for (int r = 0; r < ranks_; ++r) {
    send_at[r] = static_cast<int>(send.size());
    send.insert(send.end(), outgoing[r].begin(), outgoing[r].end());
  }
  int total = 0;
  for (int r = 0; r < ranks_; ++r) {
    recv_at[r] = total;
    total += recv_counts[r];
  }
  std::vector<char> received(static_cast<size_t>(total));
  MPI_Alltoallv(send.data(), send_counts.data(), send_at.data(), MPI_CHAR, received.data(),
                recv_counts.data(), recv_at.data(), MPI_CHAR, MPI_COMM_WORLD);
  return received;
}

uint64_t MpiTransport::sum(uint64_t v) {
  uint64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

int64_t MpiTransport::sum(int64_t v) {
  int64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return out;
}

int64_t MpiTransport::min(int64_t v) {
  int64_t out = 0;
  MPI_Allreduce(&v, &out, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  return out;
}

unsigned __int128 MpiTransport::max(unsigned __int128 v) {
  uint64_t parts[2] = {static_cast<uint64_t>(v >> 64), static_cast<uint64_t>(v)};
  std::vector<uint64_t> all(2 * static_cast<size_t>(ranks_));
  MPI_Allgather(parts, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
  unsigned __int128 best = 0;
  for (int r = 0; r < ranks_; ++r) {
    best = std::max(best, (static_cast<unsigned __int128>(all[2 * r]) << 64) | all[2 * r + 1]);
  }
  return best;
}

std::vector<std::string> MpiTransport::gather(const std::string& text) {
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(ranks_), at(ranks_);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < ranks_; ++r) {
    at[r] = total;
    total += lengths[r];
  }
  std::vector<char> all(rank_ == 0 ? static_cast<size_t>(total) : 0);
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), at.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  std::vector<std::string> texts;
  if (rank_ == 0) {
    for (int r = 0; r < ranks_; ++r)
      texts.emplace_back(all.data() + at[r], static_cast<size_t>(lengths[r]));
  }
  return texts;
}

}  // namespace fabtwin
