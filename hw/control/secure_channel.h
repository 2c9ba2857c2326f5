// One authenticated TCP connection of the control network (control_group.h).
//
// Keys. The run key K = HMAC-SHA256(token, "fabtwin-hw/v1" || run_id) ties the connection to
// the job token and to the run (the plan's hash). Each connection then derives its frame key
// F = HMAC-SHA256(K, "fabtwin-hw/v1 frames" || Ns || Nc) from both nonces, so a frame recorded
// on one connection is worthless on any other.
//
// Handshake (every integer big-endian):
//   server -> client  Hello:   "FTHW" version(1) Ns(32)
//   client -> server  Join:    "FTHW" version(1) rank(4) run_id_length(2) run_id Nc(32)
//                              HMAC(K, "client" || transcript)
//   server -> client  Accept:  "FTHW" version(1) status(1)=0 HMAC(K, "server" || transcript)
//                 or  Refuse:  "FTHW" version(1) status(1)=1 reason_length(2) reason (text)
// where transcript = Hello || Join without its MAC. The server checks the client's MAC with
// CRYPTO_memcmp before it admits the rank; the client checks the server's the same way. A
// Refuse is not authenticated: it can only end a connection, which anyone on the path can.
//
// Frames: version(1) type(1) seq(8) length(4) payload(length) tag(32), where
// tag = HMAC(F, direction(1) || version || type || seq || length || payload) and direction is
// 0 from client to server, 1 back. The receiver refuses, before anything reaches its caller: an
// unknown version or type, a length over max_frame, a bad tag, a seq other than the next
// expected one (a replayed or reordered frame), a connection closed mid-frame, and a deadline
// passed. A message longer than max_frame travels as Part frames closed by one End frame and
// is returned only when complete (at most max_message bytes). After a refusal the channel is
// broken: every later call refuses too.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hw/control/control_group.h"

namespace fabtwin::hw {

using ControlClock = std::chrono::steady_clock;
using Key = std::array<unsigned char, 32>;

inline constexpr uint8_t kControlVersion = 1;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kTagBytes = 32;
inline constexpr size_t kFrameHeaderBytes = 14;
inline constexpr size_t kDefaultMaxFrame = 64 * 1024;
inline constexpr size_t kDefaultMaxMessage = size_t{256} << 20;

enum class FrameType : uint8_t { Part = 1, End = 2 };
enum class Direction : uint8_t { ClientToServer = 0, ServerToClient = 1 };

// An open file descriptor, closed when dropped.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();
  int fd() const { return fd_; }
  int release();
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

std::vector<unsigned char> hmac_sha256(const unsigned char* key, size_t key_length,
                                       const std::vector<unsigned char>& data);
// K = HMAC(token, "fabtwin-hw/v1" || run_id).
Key derive_run_key(const std::vector<unsigned char>& token, const std::string& run_id);
// F = HMAC(K, "fabtwin-hw/v1 frames" || Ns || Nc).
Key derive_frame_key(const Key& run_key, const std::vector<unsigned char>& server_nonce,
                     const std::vector<unsigned char>& client_nonce);
// One whole frame as it goes on the wire (header, payload, tag).
std::vector<unsigned char> encode_frame(const Key& frame_key, Direction direction, FrameType type,
                                        uint64_t seq, const std::vector<unsigned char>& payload,
                                        uint8_t version = kControlVersion);

// "host:port" of the connected peer of `fd`.
std::string peer_address(int fd);
// Writes all of `bytes` before `deadline`; ControlError naming `peer` otherwise.
void write_all(int fd, const unsigned char* bytes, size_t length, ControlClock::time_point deadline,
               const std::string& peer);

struct ChannelConfig {
  std::vector<unsigned char> token;
  std::string run_id;
  size_t max_frame = kDefaultMaxFrame;      // payload bytes in one frame
  size_t max_message = kDefaultMaxMessage;  // bytes of one reassembled message
};

class SecureChannel {
 public:
  // The client's side over a connected socket: authenticates as `rank` and checks the server.
  static SecureChannel open_as_client(Socket socket, const std::string& server_name,
                                      const ChannelConfig& config, int rank,
                                      ControlClock::time_point deadline);
  // The server's side over an accepted socket. `admit(rank)` runs after the client's MAC has
  // been checked; a non-empty answer is the reason the rank is refused.
  static SecureChannel open_as_server(Socket socket, const ChannelConfig& config,
                                      const std::function<std::string(int)>& admit,
                                      ControlClock::time_point deadline);

  // One message, split into frames of at most max_frame bytes.
  void send(const std::vector<unsigned char>& message, ControlClock::time_point deadline);
  // The next whole message; ControlError (and nothing returned) on any refusal.
  std::vector<unsigned char> receive(ControlClock::time_point deadline);

  int peer_rank() const { return peer_rank_; }
  const std::string& peer() const { return peer_; }  // "rank R (host:port)" for messages
  // For tests that write their own frames on the wire.
  int native_handle() const { return socket_.fd(); }
  const Key& frame_key() const { return frame_key_; }
  Direction send_direction() const { return direction_; }
  uint64_t next_send_seq() const { return send_seq_; }

 private:
  SecureChannel(Socket socket, std::string peer, Direction direction, const Key& frame_key,
                const ChannelConfig& config, int peer_rank);
  [[noreturn]] void refuse(const std::string& what);
  void read_exact(unsigned char* into, size_t length, ControlClock::time_point deadline,
                  const char* what);

  Socket socket_;
  std::string peer_;
  Direction direction_;
  Key frame_key_{};
  size_t max_frame_;
  size_t max_message_;
  int peer_rank_ = -1;
  uint64_t send_seq_ = 0;
  uint64_t receive_seq_ = 0;
  bool broken_ = false;
};

}  // namespace fabtwin::hw
