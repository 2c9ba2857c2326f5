#include "hw/run/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <nlohmann/json.hpp>

namespace fabtwin::hw {

int64_t monotonic_raw_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

namespace {

constexpr uint32_t kHelloMagic = 0x46544857;  // "FTHW"
constexpr uint32_t kMessageFrame = 1, kAckFrame = 2;
constexpr size_t kCookieBytes = 16, kHelloBytes = 8 + kCookieBytes, kFrameBytes = 16;
using Cookie = std::array<unsigned char, kCookieBytes>;

std::string errno_text() {
  return std::strerror(errno);
}

void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
uint32_t get32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
uint64_t get64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

std::string hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

void set_nonblocking(int fd, bool on) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK);
}

// Waits until `fd` is ready for `events` or `deadline` (monotonic ns) passes.
bool wait_for(int fd, short events, int64_t deadline) {
  for (;;) {
    const int64_t left = deadline - monotonic_raw_ns();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(left / 1'000'000 + 1, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

// Reads exactly `n` bytes before `deadline`; false on EOF, error or timeout.
bool read_exactly(int fd, unsigned char* p, size_t n, int64_t deadline) {
  size_t got = 0;
  while (got < n) {
    if (!wait_for(fd, POLLIN, deadline)) return false;
    const ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

bool write_all(int fd, const unsigned char* p, size_t n, int64_t deadline) {
  size_t sent = 0;
  while (sent < n) {
    if (!wait_for(fd, POLLOUT, deadline)) return false;
    const ssize_t w = ::send(fd, p + sent, n - sent, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return false;
    }
    sent += static_cast<size_t>(w);
  }
  return true;
}

addrinfo* resolve(const std::string& address, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int e = getaddrinfo(address.c_str(), service.c_str(), &hints, &found); e != 0) {
    throw TransportError("tcp transport: cannot resolve the address '" + address +
                         "': " + gai_strerror(e));
  }
  return found;
}

struct PeerEnd {
  std::string address;
  uint16_t port = 0;
  Cookie cookie{};
};

// A peer's descriptor, checked field by field.
PeerEnd read_peer(const std::vector<unsigned char>& bytes, int rank) {
  const std::string who = "tcp transport: rank " + std::to_string(rank) + "'s data endpoint";
  nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (!j.is_object()) throw TransportError(who + ": expected a JSON object");
  PeerEnd p;
  if (!j.contains("address") || !j["address"].is_string() ||
      j["address"].get<std::string>().empty() || j["address"].get<std::string>().size() > 255) {
    throw TransportError(who + ": field address: expected a host address");
  }
  p.address = j["address"].get<std::string>();
  if (!j.contains("port") || !j["port"].is_number_integer() || j["port"].get<int64_t>() < 1 ||
      j["port"].get<int64_t>() > 65535) {
    throw TransportError(who + ": field port: expected 1..65535");
  }
  p.port = static_cast<uint16_t>(j["port"].get<int>());
  const std::string cookie = j.contains("cookie") && j["cookie"].is_string()
                                 ? j["cookie"].get<std::string>()
                                 : std::string();
  if (cookie.size() != 2 * kCookieBytes ||
      cookie.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw TransportError(who + ": field cookie: expected " + std::to_string(2 * kCookieBytes) +
                         " hex digits");
  }
  for (size_t i = 0; i < kCookieBytes; ++i) {
    p.cookie[i] = static_cast<unsigned char>(std::stoi(cookie.substr(2 * i, 2), nullptr, 16));
  }
  return p;
}

int connect_to(const PeerEnd& peer, int64_t deadline, const std::string& what) {
  addrinfo* found = resolve(peer.address, peer.port, false);
  int fd = -1;
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    set_nonblocking(fd, true);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    if (errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline)) {
      int error = 0;
      socklen_t length = sizeof error;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      if (error == 0) break;
      errno = error;
    }
    why = errno == EINPROGRESS ? "deadline passed" : errno_text();
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) {
    throw TransportError("tcp transport: " + what + ": cannot connect to " + peer.address + ":" +
                         std::to_string(peer.port) + ": " + why);
  }
  return fd;
}

}  // namespace

TcpTransport::TcpTransport(Options options) : options_(std::move(options)) {}

TcpTransport::~TcpTransport() {
  close();
}

void TcpTransport::close() {
  for (std::vector<int>* fds : {&send_fd_, &receive_fd_}) {
    for (int& fd : *fds) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  if (listener_ >= 0) ::close(listener_);
  listener_ = -1;
}

void TcpTransport::connect(const Plan& plan, ControlGroup& control) {
  close();
  rank_ = control.rank();
  const int64_t deadline = monotonic_raw_ns() + options_.connect_deadline.count() * 1'000'000;
  send_fd_.assign(plan.connections.size(), -1);
  receive_fd_.assign(plan.connections.size(), -1);

  addrinfo* local = resolve(options_.address, 0, true);
  for (addrinfo* a = local; a != nullptr && listener_ < 0; a = a->ai_next) {
    listener_ = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (listener_ < 0) continue;
    const int one = 1;
    setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(listener_, a->ai_addr, a->ai_addrlen) != 0 || ::listen(listener_, SOMAXCONN) != 0) {
      ::close(listener_);
      listener_ = -1;
    }
  }
  freeaddrinfo(local);
  if (listener_ < 0) {
    throw TransportError("tcp transport: rank " + std::to_string(rank_) +
                         " cannot listen on the data address '" + options_.address +
                         "' (hw.data_address): " + errno_text());
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&bound), &length);
  const uint16_t port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Cookie cookie{};
  if (RAND_bytes(cookie.data(), static_cast<int>(cookie.size())) != 1) {
    throw TransportError("tcp transport: no random bytes for the connection cookie");
  }
  const nlohmann::json mine = {
      {"address", options_.address}, {"port", port}, {"cookie", hex(cookie.data(), cookie.size())}};
  const std::string text = mine.dump();
  const auto all = control.allgather(std::vector<unsigned char>(text.begin(), text.end()));
  if (static_cast<int>(all.size()) != plan.ranks) {
    throw TransportError("tcp transport: the control group has " + std::to_string(all.size()) +
                         " ranks, the plan " + std::to_string(plan.ranks));
  }
  std::vector<PeerEnd> peers;
  for (size_t r = 0; r < all.size(); ++r) peers.push_back(read_peer(all[r], static_cast<int>(r)));

  // Outgoing ends first: the peers' kernels complete the connections into their listen
  // backlogs, so no rank waits for another to accept.
  size_t expected = 0;
  for (const PlannedConnection& c : plan.connections) {
    if (c.dst_rank == rank_) ++expected;
    if (c.src_rank != rank_) continue;
    const std::string what =
        "connection " + std::to_string(c.id) + " to rank " + std::to_string(c.dst_rank);
    const int fd = connect_to(peers.at(static_cast<size_t>(c.dst_rank)), deadline, what);
    send_fd_[c.id] = fd;
    unsigned char hello[kHelloBytes];
    put32(hello, kHelloMagic);
    put32(hello + 4, c.id);
    std::memcpy(hello + 8, peers[static_cast<size_t>(c.dst_rank)].cookie.data(), kCookieBytes);
    if (!write_all(fd, hello, sizeof hello, deadline)) {
      throw TransportError("tcp transport: " + what + ": cannot send the hello: " + errno_text());
    }
  }
  size_t accepted = 0;
  while (accepted < expected) {
    if (!wait_for(listener_, POLLIN, deadline)) {
      std::string missing;
      for (const PlannedConnection& c : plan.connections) {
        if (c.dst_rank == rank_ && receive_fd_[c.id] < 0 && missing.size() < 200) {
          missing += ' ';
          missing += std::to_string(c.id) + " (from rank " + std::to_string(c.src_rank) + ")";
        }
      }
      throw TransportError("tcp transport: rank " + std::to_string(rank_) + ": " +
                           std::to_string(expected - accepted) +
                           " incoming connections missing at the deadline:" + missing);
    }
    const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    unsigned char hello[kHelloBytes];
    const int64_t hello_deadline = std::min(deadline, monotonic_raw_ns() + 5'000'000'000);
    const bool read = read_exactly(fd, hello, sizeof hello, hello_deadline);
    const uint32_t id = read ? get32(hello + 4) : 0;
    const bool valid = read && get32(hello) == kHelloMagic && id < plan.connections.size() &&
                       plan.connections[id].dst_rank == rank_ && receive_fd_[id] < 0 &&
                       CRYPTO_memcmp(hello + 8, cookie.data(), kCookieBytes) == 0;
    if (!valid) {
      ::close(fd);  // a stray or forged connection: refused, the wait goes on
      continue;
    }
    receive_fd_[id] = fd;
    ++accepted;
  }
  ::close(listener_);
  listener_ = -1;
  for (std::vector<int>* fds : {&send_fd_, &receive_fd_}) {
    for (int fd : *fds) {
      if (fd < 0) continue;
      set_nonblocking(fd, true);
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
  }
}

namespace {

// One socket end in the run's poll loop.
struct End {
  int fd = -1;
  uint32_t connection = 0;
  bool sender = false;
  bool closed = false;
  // Sender: its messages (indices into the plan) in order, how many are posted, the one being
  // written and how far, and those written but not yet acknowledged.
  std::vector<size_t> messages;
  size_t posted = 0, writing = 0;
  uint64_t written = 0;  // of header + payload of messages[writing]
  std::deque<size_t> unacknowledged;
  // Both: a frame being read.
  std::array<unsigned char, kFrameBytes> frame{};
  size_t frame_read = 0;
  // Receiver: the message being received (index into `messages`) and the payload left of it.
  size_t receiving = 0;
  uint64_t payload_left = 0;
  bool in_payload = false;
  std::vector<unsigned char> acks;  // acknowledgements to write
  size_t acks_written = 0;
};

}  // namespace

TransportResult TcpTransport::run(const Plan& plan, int64_t start_ns, int64_t deadline_ns) {
  TransportResult result;
  result.properties = {{"transport", "tcp"}, {"data_address", options_.address}};
  std::vector<End> ends;
  std::vector<size_t> timing_of(plan.messages.size(), SIZE_MAX);  // plan message -> row
  std::vector<size_t> received_of(plan.messages.size(), SIZE_MAX);
  std::vector<size_t> connection_row(plan.connections.size(), SIZE_MAX);
  for (const PlannedConnection& c : plan.connections) {
    if (c.src_rank == rank_) {
      End e;
      e.fd = send_fd_.at(c.id);
      e.connection = c.id;
      e.sender = true;
      ends.push_back(std::move(e));
      connection_row[c.id] = result.connections.size();
      result.connections.push_back({c.id, 0, 0, {}});
    }
    if (c.dst_rank == rank_) {
      End e;
      e.fd = receive_fd_.at(c.id);
      e.connection = c.id;
      ends.push_back(std::move(e));
    }
  }
  std::vector<size_t> sender_end(plan.connections.size(), SIZE_MAX),
      receiver_end(plan.connections.size(), SIZE_MAX);
  for (size_t i = 0; i < ends.size(); ++i) {
    (ends[i].sender ? sender_end : receiver_end)[ends[i].connection] = i;
  }
  size_t to_complete = 0, to_receive = 0;
  for (size_t m = 0; m < plan.messages.size(); ++m) {
    const PlannedMessage& pm = plan.messages[m];
    if (const size_t s = sender_end[pm.connection]; s != SIZE_MAX) {
      ends[s].messages.push_back(m);
      timing_of[m] = result.messages.size();
      result.messages.push_back({pm.flow, pm.connection, pm.size.count, -1, -1, -1, false});
      ++to_complete;
    }
    if (const size_t r = receiver_end[pm.connection]; r != SIZE_MAX) {
      ends[r].messages.push_back(m);
      received_of[m] = result.received.size();
      result.received.push_back({pm.flow, pm.connection, pm.size.count, -1, -1, -1, false});
      ++to_receive;
    }
  }
  static const std::vector<unsigned char> payload(1 << 20, 0xa5);
  static thread_local std::vector<unsigned char> sink(1 << 20);
  const auto fail = [&](const End& e, const std::string& what) -> TransportError {
    const PlannedConnection& c = plan.connections[e.connection];
    return TransportError("tcp transport: connection " + std::to_string(c.id) + " (host " +
                          std::to_string(c.src_host) + " -> " + std::to_string(c.dst_host) + ", " +
                          (e.sender ? "to rank " + std::to_string(c.dst_rank)
                                    : "from rank " + std::to_string(c.src_rank)) +
                          "): " + what);
  };

  // Serves one end's readable bytes; returns false when the peer closed it.
  const auto serve_read = [&](End& e, int64_t now) {
    for (;;) {
      if (!e.sender && e.in_payload) {
        const size_t want = static_cast<size_t>(std::min<uint64_t>(e.payload_left, sink.size()));
        const ssize_t r = want == 0 ? 0 : ::recv(e.fd, sink.data(), want, 0);
        if (want > 0 && r <= 0) {
          if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
          return false;
        }
        e.payload_left -= static_cast<uint64_t>(std::max<ssize_t>(r, 0));
        if (e.payload_left == 0) {
          const size_t m = e.messages[e.receiving];
          MessageTiming& t = result.received[received_of[m]];
          t.received_ns = now - start_ns;
          t.completed = true;
          --to_receive;
          unsigned char ack[kFrameBytes];
          put32(ack, kAckFrame);
          put32(ack + 4, plan.messages[m].flow);
          put64(ack + 8, static_cast<uint64_t>(plan.messages[m].size.count));
          e.acks.insert(e.acks.end(), ack, ack + kFrameBytes);
          e.in_payload = false;
          ++e.receiving;
        }
        continue;
      }
      const ssize_t r = ::recv(e.fd, e.frame.data() + e.frame_read, kFrameBytes - e.frame_read, 0);
      if (r == 0) return false;
      if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
        return false;
      }
      e.frame_read += static_cast<size_t>(r);
      if (e.frame_read < kFrameBytes) continue;
      e.frame_read = 0;
      const uint32_t type = get32(e.frame.data()), flow = get32(e.frame.data() + 4);
      const uint64_t bytes = get64(e.frame.data() + 8);
      if (e.sender) {
        if (type != kAckFrame || e.unacknowledged.empty()) {
          throw fail(e, "unexpected frame from the receiver (type " + std::to_string(type) + ")");
        }
        const size_t m = e.unacknowledged.front();
        if (flow != plan.messages[m].flow ||
            bytes != static_cast<uint64_t>(plan.messages[m].size.count)) {
          throw fail(e, "acknowledgement of flow " + std::to_string(flow) + " (" +
                            std::to_string(bytes) + " B), expected flow " +
                            std::to_string(plan.messages[m].flow));
        }
        e.unacknowledged.pop_front();
        MessageTiming& t = result.messages[timing_of[m]];
        t.completed_ns = now - start_ns;
        t.completed = true;
        ConnectionTiming& ct = result.connections[connection_row[e.connection]];
        ++ct.messages_completed;
        ct.latency_ns.push_back(t.completed_ns - t.posted_ns);
        --to_complete;
      } else {
        if (type != kMessageFrame || e.receiving >= e.messages.size()) {
          throw fail(e, "unexpected frame from the sender (type " + std::to_string(type) + ")");
        }
        const PlannedMessage& pm = plan.messages[e.messages[e.receiving]];
        if (flow != pm.flow || bytes != static_cast<uint64_t>(pm.size.count)) {
          throw fail(e, "message of flow " + std::to_string(flow) + " (" + std::to_string(bytes) +
                            " B), expected flow " + std::to_string(pm.flow) + " (" +
                            std::to_string(pm.size.count) + " B)");
        }
        e.in_payload = true;
        e.payload_left = bytes;
      }
    }
  };

  // Writes what an end has to write; returns false on a broken connection.
  const auto serve_write = [&](End& e) {
    for (;;) {
      const unsigned char* data = nullptr;
      size_t size = 0;
      unsigned char header[kFrameBytes];
      if (!e.sender) {
        if (e.acks_written == e.acks.size()) return true;
        data = e.acks.data() + e.acks_written;
        size = e.acks.size() - e.acks_written;
      } else {
        if (e.writing >= e.posted) return true;
        const PlannedMessage& pm = plan.messages[e.messages[e.writing]];
        if (e.written < kFrameBytes) {
          put32(header, kMessageFrame);
          put32(header + 4, pm.flow);
          put64(header + 8, static_cast<uint64_t>(pm.size.count));
          data = header + e.written;
          size = kFrameBytes - static_cast<size_t>(e.written);
        } else {
          data = payload.data();
          size = static_cast<size_t>(std::min<uint64_t>(
              static_cast<uint64_t>(pm.size.count) + kFrameBytes - e.written, payload.size()));
        }
      }
      const ssize_t w = size == 0 ? 0 : ::send(e.fd, data, size, MSG_NOSIGNAL);
      if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (!e.sender) {
        e.acks_written += static_cast<size_t>(w);
        if (e.acks_written == e.acks.size()) {
          e.acks.clear();
          e.acks_written = 0;
        }
        continue;
      }
      e.written += static_cast<uint64_t>(w);
      const size_t m = e.messages[e.writing];
      if (e.written == static_cast<uint64_t>(plan.messages[m].size.count) + kFrameBytes) {
        ConnectionTiming& ct = result.connections[connection_row[e.connection]];
        ct.bytes_sent += plan.messages[m].size.count;
        e.unacknowledged.push_back(m);
        ++e.writing;
        e.written = 0;
      }
      if (static_cast<size_t>(w) < size) return true;
    }
  };

  std::vector<pollfd> fds;
  std::vector<size_t> polled;
  for (;;) {
    int64_t now = monotonic_raw_ns();
    // Post the messages whose start has come, in each connection's order.
    int64_t next_start = INT64_MAX;
    for (End& e : ends) {
      if (!e.sender) continue;
      while (e.posted < e.messages.size()) {
        const PlannedMessage& pm = plan.messages[e.messages[e.posted]];
        const int64_t due = start_ns + pm.start.ps / 1000;
        if (due > now) {
          next_start = std::min(next_start, due);
          break;
        }
        result.messages[timing_of[e.messages[e.posted]]].posted_ns = now - start_ns;
        ++e.posted;
      }
    }
    bool acks_pending = false;
    for (const End& e : ends) acks_pending |= !e.sender && e.acks_written < e.acks.size();
    if ((to_complete == 0 && to_receive == 0 && !acks_pending) || now >= deadline_ns) break;
    fds.clear();
    polled.clear();
    for (size_t i = 0; i < ends.size(); ++i) {
      const End& e = ends[i];
      if (e.closed) continue;
      const bool writes = e.sender ? e.writing < e.posted : e.acks_written < e.acks.size();
      fds.push_back({e.fd, static_cast<short>(POLLIN | (writes ? POLLOUT : 0)), 0});
      polled.push_back(i);
    }
    const int64_t wake = std::min(next_start, deadline_ns);
    const int64_t wait = std::max<int64_t>(0, wake - now);
    timespec timeout{static_cast<time_t>(wait / 1'000'000'000),
                     static_cast<long>(wait % 1'000'000'000)};
    const int n = ppoll(fds.data(), fds.size(), &timeout, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw TransportError("tcp transport: poll failed: " + errno_text());
    }
    if (n == 0) continue;
    now = monotonic_raw_ns();
    for (size_t k = 0; k < fds.size(); ++k) {
      End& e = ends[polled[k]];
      const short got = fds[k].revents;
      if (got == 0) continue;
      bool open = true;
      if (got & (POLLIN | POLLHUP | POLLERR)) open = serve_read(e, now);
      if (open && (got & POLLOUT)) open = serve_write(e);
      if (!open) e.closed = true;  // its messages stay incomplete; the deadline ends the run
    }
  }
  return result;
}

}  // namespace fabtwin::hw
