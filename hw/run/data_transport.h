// The data plane of a hardware run: moves the plan's messages between processes and times
// them. Two implementations: RC queue pairs on RDMA NICs (hw/verbs/verbs_transport.h) and TCP
// sockets (hw/run/tcp_transport.h), the same plan and the same measurements either way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/control/control_group.h"
#include "hw/run/plan.h"

namespace fabtwin::hw {

// When each of this process's messages was posted and completed, in nanoseconds from the
// common start on this process's CLOCK_MONOTONIC_RAW. A message is complete at the source when
// its last byte is acknowledged (RC ACK, or the receiver's acknowledgement over TCP).
struct MessageTiming {
  uint32_t flow = 0;
  uint32_t connection = 0;
  int64_t bytes = 0;
  int64_t posted_ns = -1;
  int64_t completed_ns = -1;  // -1: not completed before the deadline
  int64_t received_ns = -1;   // at the destination: the last byte arrived (if it can tell)
  bool completed = false;
};

struct ConnectionTiming {
  uint32_t connection = 0;
  int64_t bytes_sent = 0;
  int64_t messages_completed = 0;
  std::vector<int64_t> latency_ns;  // completed_ns - posted_ns of every message, in order
};

struct TransportResult {
  std::vector<MessageTiming> messages;        // messages this process sent
  std::vector<MessageTiming> received;        // messages this process received
  std::vector<ConnectionTiming> connections;  // connections whose source is this process
  std::vector<std::pair<std::string, std::string>> properties;  // e.g. device, gid, mtu
};

class DataTransport {
 public:
  virtual ~DataTransport() = default;
  virtual std::string name() const = 0;  // "verbs" or "tcp"
  // Opens this process's ends of the plan's connections and exchanges their descriptors with
  // the peers through `control` (collective: every rank calls it). Throws on any failure, with
  // what is missing (no device, no GPU, no peer-memory path) in the message.
  virtual void connect(const Plan& plan, ControlGroup& control) = 0;
  // Posts this process's messages at their start offsets from `start_ns` (CLOCK_MONOTONIC_RAW)
  // and serves incoming ones, until every message to and from this process completes or
  // `deadline_ns` passes.
  virtual TransportResult run(const Plan& plan, int64_t start_ns, int64_t deadline_ns) = 0;
  // Releases queue pairs, registrations and sockets (also done by the destructor).
  virtual void close() = 0;
};

}  // namespace fabtwin::hw
