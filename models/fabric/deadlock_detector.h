// Runtime PFC deadlock detection (docs/deadlock-detection.md). At every engine checkpoint
// (Simulator::set_checkpoints, every fabric.deadlock.check_interval) the detector looks at every
// lossless queue: switch egress queues and the NICs' send side. A queue is stuck when it holds
// frames (a NIC: data to send), is paused by its peer, and has sent nothing for at least
// fabric.deadlock.detection_time. Stuck queues wait on each other: a stuck egress queue (s, o, p)
// is paused by the ingress group (arrival port, p) of its peer switch s', whose frames sit in
// s' egress queues of priority p; it waits on those of them that are stuck. A cycle in that
// wait-for graph is a deadlock (the run stops with reason "deadlock" unless run.on_deadlock is
// "continue"); stuck queues that reach no cycle are a pause storm or pause tree, reported by their
// root and never a reason to stop. Under MPI every rank looks at its own nodes and the stuck
// queues are exchanged, so that every rank analyses the same graph and reaches the same verdict.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "models/fabric/deadlock_records.h"
#include "models/fabric/topology.h"
#include "models/net/switch.h"
#include "models/nic/host_nic.h"
#include "sim/params.h"
#include "sim/transport.h"

namespace fabtwin {

// fabric.deadlock: the detector's parameters.
struct DeadlockConfig {
  bool enabled = true;
  Time detection_time{};
  Time check_interval{};

  bool operator==(const DeadlockConfig&) const = default;
};

const ParamGroup& deadlock_params();
// Reads fabric.deadlock of a scenario (defaults when absent).
DeadlockConfig read_deadlock_config(const nlohmann::json& scenario);

// A stuck lossless queue at one checkpoint, as the ranks exchange it.
// An ingress group (port, arrival priority) as one number.
inline uint16_t ingress_group(uint32_t port, int priority) {
  return static_cast<uint16_t>(port * kPriorities + static_cast<uint32_t>(priority));
}

struct StuckQueue {
  int32_t node = 0;
  uint32_t port = 0;
  uint8_t priority = 0;
  Time since{};
  int64_t bytes = 0;  // frame bytes waiting (switch queues; 0 at a NIC)
  int64_t frames = 0;
  // Switch: the ingress groups its frames arrived in (ingress_group()), ascending.
  std::vector<uint16_t> ingress;
  std::vector<uint32_t> flows;  // switch: flows with data frames in it, ascending

  auto key() const { return std::tuple(node, port, priority); }
};

class DeadlockDetector {
 public:
  // `nics` and `switches`: the fabric's nodes by node id (hosts first, then switches), each null
  // where the node is not a NIC (a switch), or another rank runs it. `transport`: the ranks'
  // transport when there are several, else null. `stop`: run.on_deadlock is "stop".
  DeadlockDetector(const DeadlockConfig& config, bool stop, const Topology& topology,
                   const std::array<bool, kPriorities>& lossless, std::vector<const HostNic*> nics,
                   std::vector<const Switch*> switches, Transport* transport);

  // The engine checkpoint at `at`: "deadlock" to stop the run there.
  std::optional<std::string> check(Time at);

  const DeadlockReport& report() const { return report_; }

 private:
  // What the detector remembers of each (node, port, priority) between checkpoints.
  struct QueueState {
    int64_t tx_packets = 0;  // the port's count for the priority at the last checkpoint
    Time progress{};         // last time the queue was seen sending, empty or unpaused
  };

  void find_local(Time at, std::vector<StuckQueue>& out);
  std::vector<StuckQueue> gather(std::vector<StuckQueue> local);
  bool analyse(Time at, const std::vector<StuckQueue>& stuck);

  DeadlockConfig config_;
  bool stop_;
  const Topology& topology_;
  std::vector<int> lossless_;  // the lossless priorities
  std::vector<const HostNic*> nics_;
  std::vector<const Switch*> switches_;
  Transport* transport_;
  std::vector<size_t> first_state_;  // [node]: index of (port 0, priority 0) in states_
  std::vector<QueueState> states_;
  Time last_check_{};
  DeadlockReport report_;
  std::set<std::vector<std::tuple<int32_t, uint32_t, uint8_t>>> cycles_seen_;
  // Storm roots stuck at the last checkpoint: key -> row of report_.storms.
  std::map<std::tuple<int32_t, uint32_t, uint8_t>, size_t> open_storms_;
};

}  // namespace fabtwin
