#include "hw/control/control_group.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <thread>

#include "hw/control/secure_channel.h"

namespace fabtwin::hw {

namespace {

// What each message of a collective call carries first, so that ranks calling different
// collectives (or the same with different roots) stop with a clear error.
enum class Op : uint8_t { Ready = 0, Barrier = 1, Broadcast = 2, Gather = 3, Allgather = 4 };

const char* op_name(uint8_t op) {
  switch (op) {
    case 0:
      return "join";
    case 1:
      return "barrier";
    case 2:
      return "broadcast";
    case 3:
      return "gather";
    case 4:
      return "allgather";
  }
  return "an unknown call";
}

std::vector<unsigned char> envelope(Op op, int root, const std::vector<unsigned char>& body) {
  std::vector<unsigned char> out;
  out.reserve(body.size() + 5);
  out.push_back(static_cast<unsigned char>(op));
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(static_cast<uint32_t>(root) >> shift));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

// The body of a message from `channel`, checked to belong to the collective `op` at `root`.
std::vector<unsigned char> open_envelope(const std::vector<unsigned char>& message, Op op, int root,
                                         const std::string& peer) {
  if (message.size() < 5) throw ControlError(peer + ": message too short for a collective call");
  uint32_t their_root = 0;
  for (int i = 1; i < 5; ++i) their_root = (their_root << 8) | message[i];
  if (message[0] != static_cast<uint8_t>(op) || static_cast<int>(their_root) != root)
    throw ControlError(peer + ": called " + op_name(message[0]) + " (root " +
                       std::to_string(their_root) + ") where this rank called " +
                       op_name(static_cast<uint8_t>(op)) + " (root " + std::to_string(root) +
                       "): the ranks' calls differ");
  return {message.begin() + 5, message.end()};
}

// A list of byte strings as one: count(4), then length(4) and bytes of each.
std::vector<unsigned char> pack(const std::vector<std::vector<unsigned char>>& parts) {
  std::vector<unsigned char> out;
  const auto put = [&](uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<unsigned char>(v >> shift));
  };
  put(static_cast<uint32_t>(parts.size()));
  for (const auto& part : parts) {
    put(static_cast<uint32_t>(part.size()));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<std::vector<unsigned char>> unpack(const std::vector<unsigned char>& bytes,
                                               size_t expected, const std::string& peer) {
  size_t at = 0;
  const auto get = [&]() {
    if (at + 4 > bytes.size()) throw ControlError(peer + ": malformed allgather answer");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | bytes[at++];
    return v;
  };
  const uint32_t count = get();
  if (count != expected)
    throw ControlError(peer + ": allgather answer with " + std::to_string(count) +
                       " parts, expected " + std::to_string(expected));
  std::vector<std::vector<unsigned char>> parts(count);
  for (auto& part : parts) {
    const uint32_t length = get();
    if (length > bytes.size() - at) throw ControlError(peer + ": malformed allgather answer");
    part.assign(bytes.begin() + static_cast<long>(at),
                bytes.begin() + static_cast<long>(at + length));
    at += length;
  }
  if (at != bytes.size()) throw ControlError(peer + ": malformed allgather answer");
  return parts;
}

std::string endpoint(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
         std::to_string(port);
}

struct AddressList {
  addrinfo* list = nullptr;
  ~AddressList() {
    if (list) ::freeaddrinfo(list);
  }
};

void resolve(const std::string& host, uint16_t port, bool passive, AddressList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  const std::string service = std::to_string(port);
  const int error = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &out.list);
  if (error != 0)
    throw ControlError("control address " + endpoint(host, port) +
                       " cannot be resolved: " + ::gai_strerror(error));
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

ControlClock::time_point earliest(ControlClock::time_point a, ControlClock::time_point b) {
  return a < b ? a : b;
}

class StarGroup final : public ControlGroup {
 public:
  explicit StarGroup(const ControlConfig& config) : config_(config) {
    if (config.ranks < 1)
      throw ControlError("control group of " + std::to_string(config.ranks) + " ranks");
    if (config.rank < 0 || config.rank >= config.ranks)
      throw ControlError("rank " + std::to_string(config.rank) + " outside 0.." +
                         std::to_string(config.ranks - 1));
    channel_config_.token = config.token;
    channel_config_.run_id = config.run_id;
    channel_config_.max_frame = config.max_frame;
    channel_config_.max_message = config.max_message;
    if (config.rank == 0)
      serve();
    else
      connect();
  }

  int rank() const override { return config_.rank; }
  int ranks() const override { return config_.ranks; }
  uint16_t bound_port() const override { return bound_port_; }

  void barrier() override {
    const auto deadline = call_deadline();
    if (config_.rank == 0) {
      for (auto& peer : peers_) open_envelope(peer.receive(deadline), Op::Barrier, 0, peer.peer());
      for (auto& peer : peers_) peer.send(envelope(Op::Barrier, 0, {}), deadline);
    } else {
      root().send(envelope(Op::Barrier, 0, {}), deadline);
      open_envelope(root().receive(deadline), Op::Barrier, 0, root().peer());
    }
  }

  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& bytes, int from) override {
    check_root(from, "broadcast");
    const auto deadline = call_deadline();
    if (config_.rank == 0) {
      std::vector<unsigned char> value = bytes;
      if (from != 0) {
        auto& source = peers_[static_cast<size_t>(from - 1)];
        value = open_envelope(source.receive(deadline), Op::Broadcast, from, source.peer());
      }
      for (auto& peer : peers_)
        if (peer.peer_rank() != from) peer.send(envelope(Op::Broadcast, from, value), deadline);
      return value;
    }
    if (config_.rank == from) {
      root().send(envelope(Op::Broadcast, from, bytes), deadline);
      return bytes;
    }
    return open_envelope(root().receive(deadline), Op::Broadcast, from, root().peer());
  }

  std::vector<std::vector<unsigned char>> allgather(
      const std::vector<unsigned char>& bytes) override {
    const auto deadline = call_deadline();
    if (config_.rank == 0) {
      auto parts = collect(bytes, Op::Allgather, deadline);
      const auto packed = envelope(Op::Allgather, 0, pack(parts));
      for (auto& peer : peers_) peer.send(packed, deadline);
      return parts;
    }
    root().send(envelope(Op::Allgather, 0, bytes), deadline);
    return unpack(open_envelope(root().receive(deadline), Op::Allgather, 0, root().peer()),
                  static_cast<size_t>(config_.ranks), root().peer());
  }

  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& bytes) override {
    const auto deadline = call_deadline();
    if (config_.rank == 0) return collect(bytes, Op::Gather, deadline);
    root().send(envelope(Op::Gather, 0, bytes), deadline);
    return {};
  }

 private:
  ControlClock::time_point call_deadline() const {
    return ControlClock::now() + config_.call_deadline;
  }
  SecureChannel& root() { return peers_.front(); }

  void check_root(int from, const char* call) const {
    if (from < 0 || from >= config_.ranks)
      throw ControlError(std::string(call) + " from rank " + std::to_string(from) +
                         ", outside 0.." + std::to_string(config_.ranks - 1));
  }

  std::vector<std::vector<unsigned char>> collect(const std::vector<unsigned char>& own, Op op,
                                                  ControlClock::time_point deadline) {
    std::vector<std::vector<unsigned char>> parts;
    parts.reserve(static_cast<size_t>(config_.ranks));
    parts.push_back(own);
    for (auto& peer : peers_)
      parts.push_back(open_envelope(peer.receive(deadline), op, 0, peer.peer()));
    return parts;
  }

  // Rank 0: listens on the bind address and admits ranks 1..ranks-1, each once.
  void serve() {
    const std::string host =
        config_.bind_address.empty() ? config_.root_address : config_.bind_address;
    AddressList addresses;
    resolve(host, config_.root_port, true, addresses);
    std::string failure = "no address";
    for (addrinfo* a = addresses.list; a && !listener_; a = a->ai_next) {
      Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
      if (!s) continue;
      const int one = 1;
      ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 ||
          ::listen(s.fd(), std::max(config_.ranks - 1, 1)) != 0) {
        failure = std::strerror(errno);
        continue;
      }
      listener_ = std::move(s);
    }
    if (!listener_)
      throw ControlError("rank 0 cannot listen on " + endpoint(host, config_.root_port) + ": " +
                         failure);
    set_nonblocking(listener_.fd());
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(listener_.fd(), reinterpret_cast<sockaddr*>(&bound), &length);
    bound_port_ =
        ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (config_.on_listening) config_.on_listening(bound_port_);
    if (config_.ranks == 1) return;

    const auto join_deadline = ControlClock::now() + config_.join_deadline;
    std::vector<std::optional<SecureChannel>> joined(static_cast<size_t>(config_.ranks - 1));
    int missing = config_.ranks - 1;
    std::vector<std::string> refused;
    while (missing > 0) {
      const auto now = ControlClock::now();
      if (now >= join_deadline) break;
      pollfd p{listener_.fd(), POLLIN, 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(join_deadline - now).count();
      if (::poll(&p, 1, static_cast<int>(std::max<long long>(left, 1))) <= 0) continue;
      Socket client(::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!client) continue;
      set_nonblocking(client.fd());
      try {
        SecureChannel channel = SecureChannel::open_as_server(
            std::move(client), channel_config_,
            [&](int rank) -> std::string {
              if (rank < 1 || rank >= config_.ranks)
                return "rank " + std::to_string(rank) + " outside this group's ranks 1.." +
                       std::to_string(config_.ranks - 1);
              if (joined[static_cast<size_t>(rank - 1)])
                return "rank " + std::to_string(rank) + " has joined already (from " +
                       joined[static_cast<size_t>(rank - 1)]->peer() + ")";
              return {};
            },
            earliest(ControlClock::now() + config_.handshake_deadline, join_deadline));
        const int rank = channel.peer_rank();
        joined[static_cast<size_t>(rank - 1)].emplace(std::move(channel));
        --missing;
      } catch (const ControlError& error) {
        std::cerr << "fabtwin-hw: control network: " << error.what() << "\n";
        refused.push_back(error.what());
      }
    }
    if (missing > 0) {
      std::string absent;
      for (size_t i = 0; i < joined.size(); ++i)
        if (!joined[i]) absent += (absent.empty() ? "" : ", ") + std::to_string(i + 1);
      std::string message = "rank 0 at " + endpoint(host, bound_port_) + ": rank(s) " + absent +
                            " did not join within the join deadline (" +
                            std::to_string(config_.join_deadline.count()) + " ms)";
      for (const auto& r : refused) message += "; refused " + r;
      throw ControlError(message);
    }
    for (auto& channel : joined) peers_.push_back(std::move(*channel));
    listener_ = Socket();  // every rank is in: later connections are refused by the kernel
    const auto deadline = call_deadline();
    for (auto& peer : peers_) peer.send(envelope(Op::Ready, 0, {}), deadline);
  }

  // Ranks 1..: connect to rank 0 (retrying while it is not listening yet), authenticate, and
  // wait until every rank has joined.
  void connect() {
    const auto join_deadline = ControlClock::now() + config_.join_deadline;
    const std::string name = "rank 0 (" + endpoint(config_.root_address, config_.root_port) + ")";
    std::string last_error = "no attempt";
    Socket connected;
    while (!connected) {
      if (ControlClock::now() >= join_deadline)
        throw ControlError("rank " + std::to_string(config_.rank) + ": could not reach " + name +
                           " within the join deadline (" +
                           std::to_string(config_.join_deadline.count()) + " ms): " + last_error);
      AddressList addresses;
      resolve(config_.root_address, config_.root_port, false, addresses);
      for (addrinfo* a = addresses.list; a && !connected; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (!s) continue;
        set_nonblocking(s.fd());
        if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
          last_error = std::strerror(errno);
          continue;
        }
        pollfd p{s.fd(), POLLOUT, 0};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(join_deadline -
                                                                                ControlClock::now())
                              .count();
        if (::poll(&p, 1, static_cast<int>(std::clamp<long long>(left, 1, 1000))) <= 0) {
          last_error = "connection attempt timed out";
          continue;
        }
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
          last_error = std::strerror(error);
          continue;
        }
        connected = std::move(s);
      }
      if (!connected) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto handshake_deadline =
        earliest(ControlClock::now() + config_.handshake_deadline, join_deadline);
    peers_.push_back(SecureChannel::open_as_client(std::move(connected), name, channel_config_,
                                                   config_.rank, handshake_deadline));
    open_envelope(root().receive(join_deadline), Op::Ready, 0, root().peer());
  }

  ControlConfig config_;
  ChannelConfig channel_config_;
  Socket listener_;
  uint16_t bound_port_ = 0;
  std::vector<SecureChannel> peers_;  // rank 0: ranks 1.. in order; others: rank 0 alone
};

}  // namespace

std::unique_ptr<ControlGroup> ControlGroup::join(const ControlConfig& config) {
  if (config.token.size() < 32)
    throw ControlError("control group: job token of " + std::to_string(config.token.size()) +
                       " bytes, expected at least 32");
  return std::make_unique<StarGroup>(config);
}

}  // namespace fabtwin::hw
