// What a hardware run does, computed identically by every process from the resolved scenario:
// which process plays which scenario host, the connections (RC queue pairs or sockets) between
// them, and every message with its start offset. The plan's hash names the run, so processes
// given different scenarios or mappings refuse to join each other.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/traffic/flow.h"
#include "sim/units.h"

namespace fabtwin {
struct FabricSpec;
}

namespace fabtwin::hw {

struct HostMapping;  // host_mapping.h

// One connection: the queue pair (or socket) from a source host to a destination host that
// carries messages; `qp` numbers the pair's connections when nic.qps_per_flow splits flows.
struct PlannedConnection {
  uint32_t id = 0;
  int src_host = 0, dst_host = 0;  // scenario hosts
  int src_rank = 0, dst_rank = 0;  // processes
  int qp = 0;
  int dscp = 26;
  Verb verb = Verb::Write;  // the RC operation of its flows (a pair's flows of another verb get
                            // connections of their own)
};

// One message (a flow of the scenario, or its share on one connection).
struct PlannedMessage {
  uint32_t flow = 0;  // FlowSpec::id
  uint32_t connection = 0;
  Bytes size{};
  Time start{};  // offset from the run's common start
};

// One collective generator of the scenario: run through NCCL like nccl-tests (hw/nccl), not by
// the data transports; recorded here so that the plan (and its hash) covers it.
struct PlannedCollective {
  uint32_t generator = 0;  // index in the scenario's `traffic`
  std::string op;          // all_reduce, ...
  std::string type;        // float, ...
  std::string redop;
  int root = 0;
  std::vector<int64_t> sizes;
  std::vector<int> hosts;  // the scenario hosts (GPU nodes' NICs) of its ranks, in rank order
  int iterations = 1, warmup = 0;
};

struct Plan {
  int ranks = 1;
  std::vector<int> host_rank;  // scenario host -> process
  std::vector<PlannedConnection> connections;
  std::vector<PlannedMessage> messages;  // in (start, flow) order
  int64_t mtu_bytes = 4096;              // nic.mtu
  int qps_per_flow = 1;                  // nic.qps_per_flow
  std::vector<PlannedCollective> collectives;
  // Settings every process must share (transport, memory, queue-pair settings): name, value.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string hash;  // hex SHA-256 of everything above (plan_text)
};

// The hosts the scenario's flows and collectives send from or to.
std::vector<bool> hosts_in_use(const FabricSpec& spec);

// The plan (plan.cpp): one connection per (source host, destination host, DSCP, verb, qp) with
// qp below
// nic.qps_per_flow, numbered in that order; each flow split over its pair's connections as the
// simulator splits it over its queue pairs (part_bytes, host_nic.h; empty parts left out);
// messages in (start, flow, qp) order. A pure function of its arguments; `settings` (name,
// value) go into the plan and its hash as given.
Plan make_plan(const FabricSpec& spec, const HostMapping& mapping,
               std::vector<std::pair<std::string, std::string>> settings = {});

// The canonical text the hash is taken of: one line per item, in a fixed order.
std::string plan_text(const Plan& plan);

}  // namespace fabtwin::hw
