// Every model's event handler numbers, in one list, so that no component receives two handlers
// with one number. An event's kind is handler | index << 8 (sim/event.h); handlers from
// kBackgroundHandler (0x80) up are background work. Handler numbers go into run fingerprints:
// renumbering one changes every fingerprint of the runs that use it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sim/component.h"

namespace fabtwin {

// Every network node (switch or NIC): the link contract (network_node.h).
enum NodeHandler : uint32_t {
  kPacketArrival = 1,      // index = ingress port, data = Packet* | kArrivalMarked
  kTransmitDone = 2,       // index = egress port; data = a prefetch hint (network_node.h)
  kFirstModelHandler = 8,  // the first number free for a node's own handlers
};

// In a packet arrival's data, below the packet's address (packets are 64-byte aligned): the
// egress the frame left marked it CE as it was dequeued. The receiver writes the mark into the
// packet as it reads it, so the sender never touches the packet's line, which has left the
// caches while the frame waited in its queue (docs/performance.md, "The mark rides the arrival").
inline constexpr uint64_t kArrivalMarked = 1;

// Between a GPU node and its NICs (gpu_node.h, host_nic.h); data = connection << 32 | the
// message's sequence number on the connection, or post_data() for kNicPostMessage.
enum HostNicHandler : uint32_t {
  kNicMessageArrived = 0x40,  // to the host: in order, all of it, at the responder
  kNicMessageAcked = 0x41,    // to the host: acknowledged, at the requester
  kNicPostMessage = 0x42,     // to the NIC: post a message on a connection QP
};

// A switch's own (switch.cpp).
namespace switch_handler {
enum : uint32_t {
  kLinkState = 10,     // index = port, data = 1 up / 0 down
  kRouteUpdate = 11,   // data = index into the switch's own list of route updates
  kPipelineDone = 12,  // data = pipeline slot: a frame's port-to-port latency is over
  kSample = kBackgroundHandler | 1,
  kWatchdog = kBackgroundHandler | 2,  // index = port: the PFC watchdog polls its queues
  // PFC's timers are background: an expiry or a refresh outlives the pause it served (an XON
  // ends a pause early), and a fabric whose traffic is done does not wait for them. While
  // traffic is open (hold_work), they run as before.
  kPauseExpired = kBackgroundHandler | 3,  // index = port, data = priority
  kPauseRefresh = kBackgroundHandler | 4,  // index = port
};
}  // namespace switch_handler

// A host NIC's own (host_nic.cpp). The ACK timer is background: it is usually cancelled by
// progress, so an incomplete flow holds the run open instead (hold_work) until it completes.
namespace nic_handler {
enum : uint32_t {
  kFlowStart = 8,
  kPacingWake = 9,
  kRxDrained = 11,  // the head of the receive buffer has been processed
  kCcTimer = 13,    // data = requester QP whose congestion control asked for a callback
  kLinkState = 14,  // data = 1 up / 0 down (the NIC's one link)
  kCnpDue = 15,     // data = responder QP: its CNP leaves now (nic.cc.cnp_delay after the mark)
  kAckTimeout = kBackgroundHandler | 8,  // data = requester QP
  kRateSample = kBackgroundHandler | 9,
  kWatchdog = kBackgroundHandler | 10,   // the PFC watchdog polls the NIC's send queues
  kHoleTimer = kBackgroundHandler | 11,  // data = responder QP: out_of_order NAKs a hole now
  // PFC's timers, background as a switch's are.
  kPauseExpired = kBackgroundHandler | 12,    // data = priority
  kRxPauseRefresh = kBackgroundHandler | 13,  // re-send XOFF while the receive buffer stays full
  // SEND: the application posts a receive WQE again (data = receive queue). Background: a
  // repost matters only while a SEND is open, which holds the run (hold_work).
  kReceiveRepost = kBackgroundHandler | 14,
};
}  // namespace nic_handler

// A GPU node's own (gpu_node.cpp).
namespace gpu_node_handler {
enum : uint32_t {
  kUnitDone = 0x43,  // data = stream << 32 | lane: the slice's GPU work is done
  kNvArrive = 0x44,  // data = connection << 32 | sequence: an NVLink message is in the buffer
  kCredit = 0x45,    // data = connection: the receiver freed a buffer slot
  kGo = 0x46,        // index = stream, data = rank slot: launch latency over, lanes start
  kOpStart = 0x47,   // data = spec << 32 | position: run that size of the collective
  kBarrier = 0x48,   // data = spec << 32 | position: a node finished that size (coordinator)
};
}  // namespace gpu_node_handler

// What each component receives.
namespace handler_sets {
inline constexpr uint32_t kSwitch[] = {kPacketArrival,
                                       kTransmitDone,
                                       switch_handler::kPauseExpired,
                                       switch_handler::kPauseRefresh,
                                       switch_handler::kLinkState,
                                       switch_handler::kRouteUpdate,
                                       switch_handler::kPipelineDone,
                                       switch_handler::kSample,
                                       switch_handler::kWatchdog};
inline constexpr uint32_t kHostNic[] = {kPacketArrival,
                                        kTransmitDone,
                                        nic_handler::kFlowStart,
                                        nic_handler::kPacingWake,
                                        nic_handler::kPauseExpired,
                                        nic_handler::kRxDrained,
                                        nic_handler::kRxPauseRefresh,
                                        nic_handler::kCcTimer,
                                        nic_handler::kLinkState,
                                        nic_handler::kCnpDue,
                                        nic_handler::kReceiveRepost,
                                        nic_handler::kAckTimeout,
                                        nic_handler::kRateSample,
                                        nic_handler::kWatchdog,
                                        nic_handler::kHoleTimer,
                                        kNicPostMessage};
inline constexpr uint32_t kGpuNode[] = {kNicMessageArrived,          kNicMessageAcked,
                                        gpu_node_handler::kUnitDone, gpu_node_handler::kNvArrive,
                                        gpu_node_handler::kCredit,   gpu_node_handler::kGo,
                                        gpu_node_handler::kOpStart,  gpu_node_handler::kBarrier};

// Distinct, and each fits the 8 bits of a kind that name the handler.
template <size_t N>
constexpr bool valid(const uint32_t (&handlers)[N]) {
  for (size_t i = 0; i < N; ++i) {
    if (handlers[i] == 0 || handlers[i] > 0xFF) return false;
    for (size_t j = 0; j < i; ++j) {
      if (handlers[i] == handlers[j]) return false;
    }
  }
  return true;
}
static_assert(valid(kSwitch), "a switch's handlers collide");
static_assert(valid(kHostNic), "a NIC's handlers collide");
static_assert(valid(kGpuNode), "a GPU node's handlers collide");
}  // namespace handler_sets

}  // namespace fabtwin
