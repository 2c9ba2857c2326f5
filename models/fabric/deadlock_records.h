// What the runtime PFC deadlock detector (deadlock_detector.h) reports: each deadlock (a cycle of
// stuck lossless queues) with its queues and the flows stuck in them, and each pause storm (stuck
// queues that wait on no cycle) by its root queue. The summary, --json and the HDF5 /deadlock
// group all follow these field tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/record_field.h"
#include "sim/units.h"

namespace fabtwin {

// One deadlock: the first checkpoint that found its cycle.
struct DeadlockRecord {
  Time detected_at{};
  Time formed_at{};
  uint32_t queues = 0;         // length of the cycle
  int64_t bytes_stranded = 0;  // frame bytes waiting in the cycle's queues
  uint32_t flows = 0;          // flows with data frames in the cycle's queues
  uint32_t stuck_queues = 0;   // every stuck queue that waits on the cycle, the cycle's included
  int64_t stuck_bytes = 0;     // frame bytes waiting in those
};

constexpr auto record_fields(std::type_identity<DeadlockRecord>) {
  return std::tuple{
      field("detected_at_ps", &DeadlockRecord::detected_at, "ps",
            "Checkpoint (a multiple of `fabric.deadlock.check_interval`) that found the cycle; "
            "with `run.on_deadlock` = `stop` the run ended there."),
      field("formed_at_ps", &DeadlockRecord::formed_at, "ps",
            "When the cycle closed: the latest `stuck_since_ps` of its queues."),
      field("queues", &DeadlockRecord::queues, "",
            "Length of the cycle: its rows in `/deadlock/cycles`."),
      field("bytes_stranded", &DeadlockRecord::bytes_stranded, "B",
            "Frame bytes waiting in the cycle's queues at detection."),
      field("flows", &DeadlockRecord::flows, "",
            "Flows with data frames in the cycle's queues: its rows in `/deadlock/flows`."),
      field("stuck_queues", &DeadlockRecord::stuck_queues, "",
            "Stuck lossless queues that wait on the cycle, directly or through others, the "
            "cycle's own included (NIC send queues too)."),
      field("stuck_bytes", &DeadlockRecord::stuck_bytes, "B",
            "Frame bytes waiting in the switch queues among those (NICs hold no frames: their "
            "data waits in host memory)."),
  };
}

// One queue of a deadlock's cycle, in wait-for order: each waits on the next (the last on the
// first).
struct DeadlockQueueRecord {
  uint32_t deadlock = 0;  // row of DeadlockReport::deadlocks
  uint32_t position = 0;
  std::string node;
  uint32_t port = 0;
  std::string peer;
  uint8_t priority = 0;
  Time stuck_since{};
  int64_t bytes = 0;
  int64_t frames = 0;
};

constexpr auto record_fields(std::type_identity<DeadlockQueueRecord>) {
  return std::tuple{
      field("deadlock_index", &DeadlockQueueRecord::deadlock, "", "Row of `/deadlock/deadlocks`."),
      field("position", &DeadlockQueueRecord::position, "",
            "Place in the cycle, from 0: this queue waits on the next one's switch (the last on "
            "the first's)."),
      text("node", &DeadlockQueueRecord::node, 32, "Switch that owns the egress queue."),
      field("port", &DeadlockQueueRecord::port, "", "Its egress port."),
      text("peer", &DeadlockQueueRecord::peer, 32,
           "Switch at the other end, whose ingress group (arrival port, priority) pauses it."),
      field("priority", &DeadlockQueueRecord::priority, "", "Lossless priority, 0..7."),
      field("stuck_since_ps", &DeadlockQueueRecord::stuck_since, "ps",
            "Since when the queue has held frames, paused, without sending one: the start of its "
            "current pause, or the checkpoint that last saw it send, empty or unpaused if later."),
      field("bytes", &DeadlockQueueRecord::bytes, "B", "Frame bytes waiting in it at detection."),
      field("frames", &DeadlockQueueRecord::frames, "packets", "Frames waiting in it."),
  };
}

// A flow with data frames in a deadlock's cycle.
struct DeadlockFlowRecord {
  uint32_t deadlock = 0;
  uint32_t flow = 0;
};

constexpr auto record_fields(std::type_identity<DeadlockFlowRecord>) {
  return std::tuple{
      field("deadlock_index", &DeadlockFlowRecord::deadlock, "", "Row of `/deadlock/deadlocks`."),
      field("flow", &DeadlockFlowRecord::flow, "",
            "Flow id (`/flows.id`) with data frames stuck in the cycle's queues (for the NCCL "
            "collectives' queue pairs, the connection index)."),
  };
}

// A pause storm or pause tree: stuck queues that wait on no cycle, by the queue at their root
// (stuck, and waiting on nothing stuck: a receiver that does not drain, or a switch ingress
// whose frames wait in queues that are still moving). One row per stretch of checkpoints at which
// the root was stuck without a break.
struct StormRecord {
  std::string node;
  uint32_t port = 0;
  std::string peer;
  bool switch_port = false;
  uint8_t priority = 0;
  Time stuck_since{};
  Time first_detected{};
  Time last_detected{};
  uint32_t max_queues = 0;
};

constexpr auto record_fields(std::type_identity<StormRecord>) {
  return std::tuple{
      text("node", &StormRecord::node, 32, "Node of the root queue (switch or host NIC)."),
      field("port", &StormRecord::port, "", "Its egress port."),
      text("peer", &StormRecord::peer, 32,
           "Node at the other end: the one that keeps pausing the root."),
      field("is_switch", &StormRecord::switch_port, "0/1",
            "1 for a switch egress queue, 0 for a host NIC's send queue."),
      field("priority", &StormRecord::priority, "", "Lossless priority, 0..7."),
      field("stuck_since_ps", &StormRecord::stuck_since, "ps",
            "Since when the root has been stuck (see `/deadlock/cycles.stuck_since_ps`)."),
      field("first_detected_ps", &StormRecord::first_detected, "ps",
            "First checkpoint that found it stuck."),
      field("last_detected_ps", &StormRecord::last_detected, "ps",
            "Last checkpoint of the stretch that found it stuck."),
      field("max_queues", &StormRecord::max_queues, "",
            "Most stuck queues waiting on this root at one checkpoint, the root included: the "
            "size of the pause tree."),
  };
}

struct DeadlockReport {
  bool enabled = false;  // fabric.deadlock.enabled, and PFC on with a lossless priority
  Time detection_time{};
  Time check_interval{};
  std::vector<DeadlockRecord> deadlocks;
  std::vector<DeadlockQueueRecord> cycles;  // by deadlock, then position
  std::vector<DeadlockFlowRecord> flows;    // by deadlock, then flow
  std::vector<StormRecord> storms;          // by first detection, then node, port, priority
};

}  // namespace fabtwin
