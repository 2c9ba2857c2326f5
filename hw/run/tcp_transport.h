// The TCP data transport: the plan's messages over sockets between the same processes that
// would run RC queue pairs, one socket per planned connection (a connection between two scenario
// hosts of one process goes through a loopback socket too, so a timing means the same for every
// pair). Each message is framed {flow, length}, its payload streamed from a buffer, and the
// receiver acknowledges the last byte with a small frame: the sender's completion is that
// acknowledgement, as an RC WRITE's is the responder's ACK. One poll loop per process serves
// every socket, non-blocking, with TCP_NODELAY.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "hw/run/data_transport.h"

namespace fabtwin::hw {

// A data-plane failure: names the connection, the peer rank and what went wrong.
class TransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Nanoseconds of CLOCK_MONOTONIC_RAW (the clock every timing of a run is taken on).
int64_t monotonic_raw_ns();

class TcpTransport final : public DataTransport {
 public:
  struct Options {
    std::string address = "127.0.0.1";  // where the data listener binds, advertised to peers
    std::chrono::milliseconds connect_deadline{30'000};
  };
  explicit TcpTransport(Options options);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  std::string name() const override { return "tcp"; }
  // Listens on options.address (any free port), exchanges address, port and a random cookie
  // with every rank through `control`, connects this rank's outgoing connections (each opened
  // with a hello naming the connection and carrying the destination's cookie) and accepts its
  // incoming ones; a connection that presents anything else is closed and not counted.
  void connect(const Plan& plan, ControlGroup& control) override;
  TransportResult run(const Plan& plan, int64_t start_ns, int64_t deadline_ns) override;
  void close() override;

 private:
  Options options_;
  int rank_ = -1;
  std::vector<int> send_fd_, receive_fd_;  // by connection id; -1: not this rank's end
  int listener_ = -1;
};

}  // namespace fabtwin::hw
