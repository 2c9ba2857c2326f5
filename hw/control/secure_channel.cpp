#include "hw/control/secure_channel.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fabtwin::hw {

namespace {

constexpr unsigned char kMagic[4] = {'F', 'T', 'H', 'W'};
constexpr size_t kMaxRunIdBytes = 256;
constexpr size_t kMaxReasonBytes = 512;
constexpr char kKeyLabel[] = "fabtwin-hw/v1";
constexpr char kFrameKeyLabel[] = "fabtwin-hw/v1 frames";

void put_u16(std::vector<unsigned char>& out, uint16_t v) {
  out.push_back(static_cast<unsigned char>(v >> 8));
  out.push_back(static_cast<unsigned char>(v));
}
void put_u32(std::vector<unsigned char>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(v >> shift));
}
void put_u64(std::vector<unsigned char>& out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(v >> shift));
}
uint64_t get_be(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}
void put_bytes(std::vector<unsigned char>& out, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  out.insert(out.end(), b, b + n);
}

int remaining_ms(ControlClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ControlClock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1'000'000));
}

// Waits for `events` on `fd` until `deadline`: false when the deadline passed first.
bool wait_for(int fd, short events, ControlClock::time_point deadline) {
  for (;;) {
    const int left = remaining_ms(deadline);
    if (left == 0 && ControlClock::now() >= deadline) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, std::max(left, 1));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR)
      throw ControlError(std::string("poll on the control connection failed: ") +
                         std::strerror(errno));
  }
}

std::vector<unsigned char> random_bytes(size_t n) {
  std::vector<unsigned char> out(n);
  size_t filled = 0;
  while (filled < n) {
    const ssize_t got = ::getrandom(out.data() + filled, n - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw ControlError(std::string("getrandom failed: ") + std::strerror(errno));
    filled += static_cast<size_t>(got);
  }
  return out;
}

// Frames go out at once: the control network's messages are small and answered.
void no_delay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool equal_in_constant_time(const unsigned char* a, const unsigned char* b, size_t n) {
  return CRYPTO_memcmp(a, b, n) == 0;
}

// Reads exactly `length` bytes; ControlError naming `peer` and `what` when the peer closes
// first, the read fails or the deadline passes.
void read_all(int fd, unsigned char* into, size_t length, ControlClock::time_point deadline,
              const std::string& peer, const std::string& what) {
  size_t got = 0;
  while (got < length) {
    if (!wait_for(fd, POLLIN, deadline))
      throw ControlError(peer + ": deadline passed waiting for " + what + " (" +
                         std::to_string(got) + " of " + std::to_string(length) + " bytes came)");
    const ssize_t n = ::recv(fd, into + got, length - got, MSG_DONTWAIT);
    if (n == 0)
      throw ControlError(peer + ": connection closed " +
                         (got == 0 ? "before " + what
                                   : "mid-way through " + what + " (truncated after " +
                                         std::to_string(got) + " of " + std::to_string(length) +
                                         " bytes)"));
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw ControlError(peer + ": reading " + what + " failed: " + std::strerror(errno));
    }
    got += static_cast<size_t>(n);
  }
}

std::vector<unsigned char> handshake_mac(const Key& run_key, const char* role,
                                         const std::vector<unsigned char>& transcript) {
  std::vector<unsigned char> data;
  put_bytes(data, role, std::strlen(role));
  put_bytes(data, transcript.data(), transcript.size());
  return hmac_sha256(run_key.data(), run_key.size(), data);
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

int Socket::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::vector<unsigned char> hmac_sha256(const unsigned char* key, size_t key_length,
                                       const std::vector<unsigned char>& data) {
  std::vector<unsigned char> out(EVP_MAX_MD_SIZE);
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key, static_cast<int>(key_length), data.data(), data.size(), out.data(),
            &length))
    throw ControlError("HMAC-SHA256 failed (OpenSSL)");
  out.resize(length);
  return out;
}

Key derive_run_key(const std::vector<unsigned char>& token, const std::string& run_id) {
  std::vector<unsigned char> data;
  put_bytes(data, kKeyLabel, std::strlen(kKeyLabel));
  put_bytes(data, run_id.data(), run_id.size());
  const auto mac = hmac_sha256(token.data(), token.size(), data);
  Key key{};
  std::copy(mac.begin(), mac.end(), key.begin());
  return key;
}

Key derive_frame_key(const Key& run_key, const std::vector<unsigned char>& server_nonce,
                     const std::vector<unsigned char>& client_nonce) {
  std::vector<unsigned char> data;
  put_bytes(data, kFrameKeyLabel, std::strlen(kFrameKeyLabel));
  put_bytes(data, server_nonce.data(), server_nonce.size());
  put_bytes(data, client_nonce.data(), client_nonce.size());
  const auto mac = hmac_sha256(run_key.data(), run_key.size(), data);
  Key key{};
  std::copy(mac.begin(), mac.end(), key.begin());
  return key;
}

namespace {

std::vector<unsigned char> frame_header(FrameType type, uint64_t seq, size_t length,
                                        uint8_t version) {
  std::vector<unsigned char> header;
  header.push_back(version);
  header.push_back(static_cast<unsigned char>(type));
  put_u64(header, seq);
  put_u32(header, static_cast<uint32_t>(length));
  return header;
}

std::vector<unsigned char> frame_tag(const Key& frame_key, Direction direction,
                                     const unsigned char* header, const unsigned char* payload,
                                     size_t length) {
  std::vector<unsigned char> data;
  data.reserve(1 + kFrameHeaderBytes + length);
  data.push_back(static_cast<unsigned char>(direction));
  put_bytes(data, header, kFrameHeaderBytes);
  put_bytes(data, payload, length);
  return hmac_sha256(frame_key.data(), frame_key.size(), data);
}

}  // namespace

std::vector<unsigned char> encode_frame(const Key& frame_key, Direction direction, FrameType type,
                                        uint64_t seq, const std::vector<unsigned char>& payload,
                                        uint8_t version) {
  auto frame = frame_header(type, seq, payload.size(), version);
  const auto tag = frame_tag(frame_key, direction, frame.data(), payload.data(), payload.size());
  put_bytes(frame, payload.data(), payload.size());
  put_bytes(frame, tag.data(), tag.size());
  return frame;
}

std::string peer_address(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (address.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (address.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
    std::string text(1, '[');
    text += host;
    text += "]:";
    text += std::to_string(port);
    return text;
  }
  return "?";
}

void write_all(int fd, const unsigned char* bytes, size_t length, ControlClock::time_point deadline,
               const std::string& peer) {
  size_t sent = 0;
  while (sent < length) {
    if (!wait_for(fd, POLLOUT, deadline))
      throw ControlError(peer + ": deadline passed while sending (" + std::to_string(sent) +
                         " of " + std::to_string(length) + " bytes went)");
    const ssize_t n = ::send(fd, bytes + sent, length - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      throw ControlError(peer + ": sending failed: " + std::strerror(errno));
    }
    sent += static_cast<size_t>(n);
  }
}

SecureChannel::SecureChannel(Socket socket, std::string peer, Direction direction,
                             const Key& frame_key, const ChannelConfig& config, int peer_rank)
    : socket_(std::move(socket)),
      peer_(std::move(peer)),
      direction_(direction),
      frame_key_(frame_key),
      max_frame_(config.max_frame),
      max_message_(config.max_message),
      peer_rank_(peer_rank) {}

SecureChannel SecureChannel::open_as_client(Socket socket, const std::string& server_name,
                                            const ChannelConfig& config, int rank,
                                            ControlClock::time_point deadline) {
  const int fd = socket.fd();
  no_delay(fd);
  const std::string& peer = server_name;
  if (config.run_id.size() > kMaxRunIdBytes)
    throw ControlError("run id longer than " + std::to_string(kMaxRunIdBytes) + " bytes");
  unsigned char hello[4 + 1 + kNonceBytes];
  read_all(fd, hello, sizeof hello, deadline, peer, "the handshake's hello");
  if (!std::equal(kMagic, kMagic + 4, hello))
    throw ControlError(peer + ": refused: not a fabtwin-hw control server (bad magic)");
  if (hello[4] != kControlVersion)
    throw ControlError(peer + ": refused: protocol version " + std::to_string(hello[4]) +
                       ", this process speaks " + std::to_string(kControlVersion));
  const std::vector<unsigned char> server_nonce(hello + 5, hello + sizeof hello);
  const auto client_nonce = random_bytes(kNonceBytes);
  std::vector<unsigned char> transcript(hello, hello + sizeof hello);
  const size_t join_start = transcript.size();
  put_bytes(transcript, kMagic, 4);
  transcript.push_back(kControlVersion);
  put_u32(transcript, static_cast<uint32_t>(rank));
  put_u16(transcript, static_cast<uint16_t>(config.run_id.size()));
  put_bytes(transcript, config.run_id.data(), config.run_id.size());
  put_bytes(transcript, client_nonce.data(), client_nonce.size());
  const Key run_key = derive_run_key(config.token, config.run_id);
  std::vector<unsigned char> join(transcript.begin() + join_start, transcript.end());
  const auto mac = handshake_mac(run_key, "client", transcript);
  put_bytes(join, mac.data(), mac.size());
  write_all(fd, join.data(), join.size(), deadline, peer);

  unsigned char answer[4 + 1 + 1];
  read_all(fd, answer, sizeof answer, deadline, peer, "the handshake's answer");
  if (!std::equal(kMagic, kMagic + 4, answer) || answer[4] != kControlVersion)
    throw ControlError(peer + ": refused: malformed handshake answer");
  if (answer[5] == 1) {
    unsigned char length_bytes[2];
    read_all(fd, length_bytes, 2, deadline, peer, "the refusal's reason");
    const size_t length = std::min<size_t>(get_be(length_bytes, 2), kMaxReasonBytes);
    std::string reason(length, '\0');
    read_all(fd, reinterpret_cast<unsigned char*>(reason.data()), length, deadline, peer,
             "the refusal's reason");
    for (char& c : reason)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
    throw ControlError(peer + ": refused this process (rank " + std::to_string(rank) +
                       "): " + reason);
  }
  if (answer[5] != 0) throw ControlError(peer + ": refused: malformed handshake answer status");
  unsigned char server_mac[kTagBytes];
  read_all(fd, server_mac, sizeof server_mac, deadline, peer, "the server's proof");
  const auto expected = handshake_mac(run_key, "server", transcript);
  if (!equal_in_constant_time(server_mac, expected.data(), kTagBytes))
    throw ControlError(peer +
                       ": refused: the server's proof does not match (it holds a different job "
                       "token or run id)");
  return SecureChannel(std::move(socket), server_name, Direction::ClientToServer,
                       derive_frame_key(run_key, server_nonce, client_nonce), config, 0);
}

SecureChannel SecureChannel::open_as_server(Socket socket, const ChannelConfig& config,
                                            const std::function<std::string(int)>& admit,
                                            ControlClock::time_point deadline) {
  const int fd = socket.fd();
  no_delay(fd);
  const std::string address = peer_address(fd);
  std::string peer = "client at " + address;
  const auto refuse_client = [&](const std::string& reason) {
    std::vector<unsigned char> refusal(kMagic, kMagic + 4);
    refusal.push_back(kControlVersion);
    refusal.push_back(1);
    const std::string text = reason.substr(0, kMaxReasonBytes);
    put_u16(refusal, static_cast<uint16_t>(text.size()));
    put_bytes(refusal, text.data(), text.size());
    try {
      write_all(fd, refusal.data(), refusal.size(), deadline, peer);
    } catch (const ControlError&) {
      // The refusal is a courtesy; the connection is refused either way.
    }
    throw ControlError(peer + ": refused: " + reason);
  };

  std::vector<unsigned char> transcript(kMagic, kMagic + 4);
  transcript.push_back(kControlVersion);
  const auto server_nonce = random_bytes(kNonceBytes);
  put_bytes(transcript, server_nonce.data(), server_nonce.size());
  write_all(fd, transcript.data(), transcript.size(), deadline, peer);

  unsigned char fixed[4 + 1 + 4 + 2];
  read_all(fd, fixed, sizeof fixed, deadline, peer, "the handshake's join");
  if (!std::equal(kMagic, kMagic + 4, fixed))
    refuse_client("not a fabtwin-hw control client (bad magic)");
  if (fixed[4] != kControlVersion)
    refuse_client("protocol version " + std::to_string(fixed[4]) + ", this server speaks " +
                  std::to_string(kControlVersion));
  const auto claimed_rank = static_cast<uint32_t>(get_be(fixed + 5, 4));
  const size_t run_id_length = get_be(fixed + 9, 2);
  if (run_id_length > kMaxRunIdBytes)
    refuse_client("run id of " + std::to_string(run_id_length) + " bytes, at most " +
                  std::to_string(kMaxRunIdBytes));
  std::vector<unsigned char> rest(run_id_length + kNonceBytes + kTagBytes);
  read_all(fd, rest.data(), rest.size(), deadline, peer, "the handshake's join");
  put_bytes(transcript, fixed, sizeof fixed);
  put_bytes(transcript, rest.data(), run_id_length + kNonceBytes);
  const std::string run_id(rest.begin(), rest.begin() + static_cast<long>(run_id_length));
  const std::vector<unsigned char> client_nonce(
      rest.begin() + static_cast<long>(run_id_length),
      rest.begin() + static_cast<long>(run_id_length + kNonceBytes));
  if (run_id != config.run_id)
    refuse_client("different run id: the client has \"" + run_id.substr(0, 64) +
                  "\", this server \"" + config.run_id.substr(0, 64) +
                  "\" (different scenario, mapping or plan)");
  const Key run_key = derive_run_key(config.token, config.run_id);
  const auto expected = handshake_mac(run_key, "client", transcript);
  if (!equal_in_constant_time(rest.data() + run_id_length + kNonceBytes, expected.data(),
                              kTagBytes))
    refuse_client(
        "authentication failed: the client's proof does not match (different job "
        "token)");
  if (claimed_rank > 0x7fffffffu)
    refuse_client("rank " + std::to_string(claimed_rank) + " invalid");
  const int rank = static_cast<int>(claimed_rank);
  peer = "rank " + std::to_string(rank) + " (" + address + ")";
  if (const std::string reason = admit(rank); !reason.empty()) refuse_client(reason);

  std::vector<unsigned char> accept(kMagic, kMagic + 4);
  accept.push_back(kControlVersion);
  accept.push_back(0);
  const auto mac = handshake_mac(run_key, "server", transcript);
  put_bytes(accept, mac.data(), mac.size());
  write_all(fd, accept.data(), accept.size(), deadline, peer);
  return SecureChannel(std::move(socket), peer, Direction::ServerToClient,
                       derive_frame_key(run_key, server_nonce, client_nonce), config, rank);
}

void SecureChannel::refuse(const std::string& what) {
  broken_ = true;
  throw ControlError(peer_ + ": " + what);
}

void SecureChannel::send(const std::vector<unsigned char>& message,
                         ControlClock::time_point deadline) {
  if (broken_) throw ControlError(peer_ + ": the channel was closed after an earlier refusal");
  if (message.size() > max_message_)
    throw ControlError(peer_ + ": message of " + std::to_string(message.size()) +
                       " bytes over the maximum " + std::to_string(max_message_));
  size_t offset = 0;
  do {
    const size_t length = std::min(max_frame_, message.size() - offset);
    const bool last = offset + length == message.size();
    const std::vector<unsigned char> payload(message.begin() + static_cast<long>(offset),
                                             message.begin() + static_cast<long>(offset + length));
    const auto frame = encode_frame(frame_key_, direction_, last ? FrameType::End : FrameType::Part,
                                    send_seq_, payload);
    try {
      write_all(socket_.fd(), frame.data(), frame.size(), deadline, peer_);
    } catch (const ControlError&) {
      broken_ = true;
      throw;
    }
    ++send_seq_;
    offset += length;
  } while (offset < message.size());
}

void SecureChannel::read_exact(unsigned char* into, size_t length,
                               ControlClock::time_point deadline, const char* what) {
  try {
    read_all(socket_.fd(), into, length, deadline, peer_, what);
  } catch (const ControlError&) {
    broken_ = true;
    throw;
  }
}

std::vector<unsigned char> SecureChannel::receive(ControlClock::time_point deadline) {
  if (broken_) throw ControlError(peer_ + ": the channel was closed after an earlier refusal");
  const Direction expected_direction = direction_ == Direction::ClientToServer
                                           ? Direction::ServerToClient
                                           : Direction::ClientToServer;
  std::vector<unsigned char> message;
  for (;;) {
    unsigned char header[kFrameHeaderBytes];
    read_exact(header, sizeof header, deadline, "a frame header");
    if (header[0] != kControlVersion)
      refuse("refused a frame of unknown protocol version " + std::to_string(header[0]) +
             " (expected " + std::to_string(kControlVersion) + ")");
    const uint8_t type = header[1];
    if (type != static_cast<uint8_t>(FrameType::Part) &&
        type != static_cast<uint8_t>(FrameType::End))
      refuse("refused a frame of unknown type " + std::to_string(type));
    const uint64_t seq = get_be(header + 2, 8);
    const uint64_t length = get_be(header + 10, 4);
    if (length > max_frame_)
      refuse("refused an oversized frame: length " + std::to_string(length) +
             " bytes over the maximum " + std::to_string(max_frame_));
    if (message.size() + length > max_message_)
      refuse("refused a message over the maximum of " + std::to_string(max_message_) + " bytes");
    std::vector<unsigned char> body(length + kTagBytes);
    read_exact(body.data(), body.size(), deadline, "a frame's payload and tag");
    const auto tag = frame_tag(frame_key_, expected_direction, header, body.data(), length);
    if (!equal_in_constant_time(tag.data(), body.data() + length, kTagBytes))
      refuse("refused a frame with a bad tag (seq " + std::to_string(seq) +
             "): tampered, or not from this connection");
    if (seq < receive_seq_)
      refuse("refused a replayed frame: seq " + std::to_string(seq) + " was already received (" +
             "expected " + std::to_string(receive_seq_) + ")");
    if (seq > receive_seq_)
      refuse("refused a frame out of order: seq " + std::to_string(seq) + ", expected " +
             std::to_string(receive_seq_));
    ++receive_seq_;
    message.insert(message.end(), body.begin(), body.begin() + static_cast<long>(length));
    if (type == static_cast<uint8_t>(FrameType::End)) return message;
  }
}

}  // namespace fabtwin::hw
