// What a port counts, per priority. Each counter is one line of FABTWIN_PRIORITY_COUNTERS: its
// type, member, name in the outputs, merge rule, unit and meaning. That line declares the member
// and its entry in the field table, which the MPI merge, the --json report, the HDF5 tables
// (/ports totals and /port_priority) and docs/hdf5-schema.md all follow; a new counter needs
// that line and its increment in the model.
#pragma once

#include <cstdint>

#include "sim/record_field.h"
#include "sim/units.h"

namespace fabtwin {

#define FABTWIN_PRIORITY_COUNTERS(X)                                                            \
  X(int64_t, tx_packets, "tx_packets", Sum, "packets",                                          \
    "Frames transmitted (data, ACKs, NAKs and CNPs; PFC frames are not counted).")              \
  X(int64_t, tx_bytes, "tx_bytes", Sum, "B",                                                    \
    "Ethernet frame bytes transmitted (headers + payload + FCS).")                              \
  X(int64_t, max_queue_bytes, "max_queue_bytes", Max, "B",                                      \
    "Deepest the queue got (frames waiting, not the one on the wire).")                         \
  X(int64_t, ecn_marks, "ecn_marks", Sum, "packets",                                            \
    "Packets marked CE at this egress queue (switch ports only; RED on the queue's depth).")    \
  X(int64_t, drops, "drops", Sum, "packets",                                                    \
    "Frames dropped at this port, any cause, counted where the cause lies: "                    \
    "`drops_egress + drops_headroom + drops_ttl + drops_link_down + drops_unroutable + "        \
    "watchdog_drops`.")                                                                         \
  X(int64_t, drop_bytes, "drop_bytes", Sum, "B", "Frame bytes of those drops.")                 \
  X(int64_t, drops_egress, "drops_egress", Sum, "packets",                                      \
    "Lossy frames headed out of this port and dropped because their queue was at its dynamic "  \
    "egress limit (or the shared pool was full).")                                              \
  X(int64_t, drops_headroom, "drops_headroom", Sum, "packets",                                  \
    "Lossless frames that arrived on this port and were dropped because their (port, "          \
    "priority) group's PFC headroom was full. Non-zero means the headroom is too small.")       \
  X(int64_t, drops_ttl, "drops_ttl", Sum, "packets",                                            \
    "Frames that arrived on this port and were dropped because their IP TTL reached 0 at this " \
    "switch (a routing loop; routing.ttl).")                                                    \
  X(int64_t, drops_link_down, "drops_link_down", Sum, "packets",                                \
    "Frames lost because this port's link was down: queued at this egress when it failed, "     \
    "routed to it while down, or in flight toward this port when it failed (counted at the "    \
    "receiving end, on the priority they were sent with).")                                     \
  X(int64_t, drops_unroutable, "drops_unroutable", Sum, "packets",                              \
    "Frames that arrived on this port and were dropped because this switch had no route to "    \
    "their destination (an unreachable host after link failures).")                             \
  X(int64_t, pause_sent, "pause_sent", Sum, "frames",                                           \
    "PFC XOFF frames this port sent to its peer (as the ingress of a paused group), refreshes " \
    "included.")                                                                                \
  X(int64_t, xon_sent, "xon_sent", Sum, "frames",                                               \
    "PFC XON frames (pause time 0) sent to the peer.")                                          \
  X(int64_t, xoff_transitions, "xoff_transitions", Sum, "",                                     \
    "Times this port's ingress group went from flowing to paused (the first XOFF of each "      \
    "episode; refreshes not counted).")                                                         \
  X(int64_t, pause_received, "pause_received", Sum, "frames",                                   \
    "PFC XOFF frames received from the peer.")                                                  \
  X(int64_t, xon_received, "xon_received", Sum, "frames",                                       \
    "PFC XON frames received from the peer.")                                                   \
  X(Time, paused_time, "paused_ps", Sum, "ps",                                                  \
    "Time this egress queue was paused by the peer; equals the summed length of its "           \
    "`/pfc_pauses` intervals.")                                                                 \
  X(int64_t, cnp_sent, "cnp_sent", Sum, "CNPs",                                                 \
    "Host NIC ports only: CNPs this NIC's notification point sent (counted on the CNPs' "       \
    "priority: `nic.cc.cnp_dscp` through the DSCP map, 6 by default).")                         \
  X(int64_t, cnp_received, "cnp_received", Sum, "CNPs",                                         \
    "Host NIC ports only: CNPs that arrived at this NIC for its send queue pairs, on the "      \
    "priority they were sent with.")                                                            \
  X(int64_t, watchdog_storms, "watchdog_storms", Sum, "",                                       \
    "Times the PFC watchdog declared this egress queue stuck in a pause storm (paused "         \
    "continuously for fabric.pfc.watchdog.detection_time with frames waiting).")                \
  X(int64_t, watchdog_drops, "watchdog_drops", Sum, "packets",                                  \
    "Frames the PFC watchdog discarded at this egress queue during storms (action drop): "      \
    "those queued when the storm was declared and every later one until restoration.")

// The counters every frame updates come first: a port keeps each priority's record on lines of
// its own (QueueCounters, egress_port.h), so that a frame touches one line of them.
struct PriorityCounters {
#define FABTWIN_COUNTER_MEMBER(type, member, name, merge, unit, meaning) type member{};
  FABTWIN_PRIORITY_COUNTERS(FABTWIN_COUNTER_MEMBER)
#undef FABTWIN_COUNTER_MEMBER
};

constexpr auto record_fields(std::type_identity<PriorityCounters>) {
#define FABTWIN_COUNTER_FIELD(type, member, name, merge, unit, meaning) \
  field(name, &PriorityCounters::member, unit, meaning, Merge::merge),
  return std::tuple{FABTWIN_PRIORITY_COUNTERS(FABTWIN_COUNTER_FIELD)};
#undef FABTWIN_COUNTER_FIELD
}

}  // namespace fabtwin
