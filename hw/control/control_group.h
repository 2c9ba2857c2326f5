// The control network of a hardware run: the processes of one `fabtwin-hw` job (one per real
// host, or one per MPI rank) joined in a star around rank 0 over TCP, every connection opened
// with an HMAC handshake on the job token and every frame authenticated (secure_channel.h).
// Plans, queue-pair and memory descriptors, NCCL's unique id and the measurements travel only
// through it. Every call has a deadline; a peer that misses it, or sends a frame that fails
// its check, ends the job with ControlError naming the peer and what was wrong.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabtwin::hw {

// A refused or failed control-network step: names the peer (rank, address) and the reason.
class ControlError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ControlConfig {
  int rank = 0;
  int ranks = 1;
  std::string root_address = "127.0.0.1";  // where rank 0 listens (the control network)
  uint16_t root_port = 18600;              // 0 (rank 0 only): any free port, see bound_port()
  std::string bind_address;  // rank 0's listening address; empty: root_address. Never implied
                             // to be 0.0.0.0: a wildcard must be written explicitly.
  std::string run_id;        // names the run in the handshake's key derivation (plan hash)
  std::vector<unsigned char> token;  // the job token (job_token.h), at least 32 bytes
  std::chrono::milliseconds handshake_deadline{10'000};  // per connection
  std::chrono::milliseconds join_deadline{120'000};      // every rank joined
  std::chrono::milliseconds call_deadline{600'000};      // one collective call below
  // Rank 0: called with the bound port once it listens, before the others join (root_port 0).
  std::function<void(uint16_t)> on_listening;
  size_t max_frame = 64 * 1024;            // payload bytes of one frame (larger messages are split)
  size_t max_message = size_t{256} << 20;  // bytes of one reassembled message
};

class ControlGroup {
 public:
  // Rank 0 listens and accepts ranks-1 authenticated peers; the others connect (retrying until
  // join_deadline) and authenticate. Returns when every rank has joined.
  static std::unique_ptr<ControlGroup> join(const ControlConfig& config);
  virtual ~ControlGroup() = default;

  virtual int rank() const = 0;
  virtual int ranks() const = 0;
  virtual uint16_t bound_port() const = 0;  // rank 0: the port it listens on

  // Collective calls: every rank calls them in the same order.
  virtual void barrier() = 0;
  // Rank `root`'s bytes, on every rank.
  virtual std::vector<unsigned char> broadcast(const std::vector<unsigned char>& bytes,
                                               int root = 0) = 0;
  // Every rank's bytes, in rank order, on every rank.
  virtual std::vector<std::vector<unsigned char>> allgather(
      const std::vector<unsigned char>& bytes) = 0;
  // Every rank's bytes, in rank order, on rank 0 (empty elsewhere).
  virtual std::vector<std::vector<unsigned char>> gather(
      const std::vector<unsigned char>& bytes) = 0;
};

}  // namespace fabtwin::hw
