// What a hardware run does, computed identically by every process from the resolved scenario:
// which process plays which scenario host, the connections (RC queue pairs or sockets) between
// them, and every message with its start offset. The plan's hash names the run, so processes
// given different scenarios or mappings refuse to join each other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/traffic/flow.h"
#include "sim/units.h"

namespace fabtwin::hw {

// One connection: the queue pair (or socket) from a source host to a destination host that
// carries messages; `qp` numbers the pair's connections when nic.qps_per_flow splits flows.
struct PlannedConnection {
  uint32_t id = 0;
  int src_host = 0, dst_host = 0;  // scenario hosts
  int src_rank = 0, dst_rank = 0;  // processes
  int qp = 0;
  int dscp = 26;
};

// One message (a flow of the scenario, or its share on one connection).
struct PlannedMessage {
  uint32_t flow = 0;  // FlowSpec::id
  uint32_t connection = 0;
  Bytes size{};
  Time start{};  // offset from the run's common start
};

struct Plan {
  int ranks = 1;
  std::vector<int> host_rank;  // scenario host -> process
  std::vector<PlannedConnection> connections;
  std::vector<PlannedMessage> messages;  // in (start, flow) order
  int64_t mtu_bytes = 4096;              // nic.mtu
  std::string hash;                      // hex SHA-256 of everything above
};

}  // namespace fabtwin::hw
