// The two ends of a reliable-connected (RC) queue pair. The requester segments each message
// into MTU-sized packets, paces them at its rate and recovers losses go-back-N on a NAK or a
// timeout; the responder checks PSNs, delivers in order and answers with ACKs and NAKs.
// Both ends are state and rules only: the NIC owning them schedules their events and puts their
// packets on the wire.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/cc/congestion_control.h"
#include "models/net/packet.h"
#include "models/nic/notification_point.h"
#include "models/traffic/flow.h"

namespace fabtwin {

// Packets of `bytes` split at `mtu` payload bytes (0 for an empty flow).
inline uint32_t packets_of(int64_t bytes, int64_t mtu) {
  return static_cast<uint32_t>((bytes + mtu - 1) / mtu);
}

// The sending end. A flow QP sends one message (its flow); a connection QP (one of `lanes` QPs
// of a persistent connection) sends the messages its host posts, and reports them acknowledged.
struct RequesterQp {
  FlowSpec flow;
  uint32_t packets = 0;  // PSNs 0 .. packets-1
  uint32_t receiver_qp = 0;
  uint32_t hash = 0;         // 5-tuple hash with this QP's UDP source port
  int priority = 0;          // egress priority (from the flow's DSCP)
  uint32_t next_psn = 0;     // next PSN to send
  uint32_t unacked_psn = 0;  // oldest PSN not yet acknowledged
  bool active = false;       // in the NIC's send rotation
  bool done = false;
  bool timer_scheduled = false;
  Time deadline{};                        // retransmit if no progress by then
  Time next_send{};                       // pacing: earliest time of the next packet
  Time last_sent{};                       // when the last data packet went out
  int last_frame = 0;                     // and its frame bytes
  BitsPerSec rate{};                      // current sending rate (line rate unless a CC lowers it)
  std::unique_ptr<CongestionControl> cc;  // null: no congestion control
  Time cc_timer_at = Time::max();         // a CC timer event is pending for this time
  bool window_blocked = false;            // skipped for want of window since the last ACK
  bool started = false;
  FlowRecord record;
  // Connection QPs only: the messages posted so far (one past the last PSN of each, and the
  // payload of that last packet), the one holding next_psn, and how many are acknowledged.
  bool connection = false;
  uint32_t lane = 0, lanes = 1;
  std::vector<std::pair<uint32_t, int32_t>> messages;
  uint32_t cursor = 0;
  uint32_t acked_messages = 0;

  bool all_sent() const { return next_psn >= packets; }
  bool all_acked() const { return unacked_psn >= packets; }
  // Payload bytes sent and not yet acknowledged, counting every packet as a full `mtu`.
  int64_t in_flight(int64_t mtu) const { return int64_t{next_psn - unacked_psn} * mtu; }
  // The congestion control's window has room for one more packet.
  bool window_open(int64_t mtu) const { return !cc || in_flight(mtu) + mtu <= cc->window(); }

  // A message of `bytes` (an RDMA WRITE; an empty one is still one packet) joins the queue.
  void post_message(int64_t bytes, int64_t mtu, Time now, Time ack_timeout);
  // Segmentation: fills `p` as the data packet of the next PSN (`index`: this QP's index).
  void write_next_packet(Packet& p, uint32_t index, int host, int64_t mtu);
  // Data packet `p` went on the wire at `now`: the timeout restarts for the oldest PSN, the
  // congestion control hears of it, and pacing sets the earliest time of the next packet.
  void on_packet_sent(const Packet& p, Time now, Time ack_timeout, BitsPerSec line_rate);
  // Takes the congestion control's new rate. The pacing gap of the last packet is re-timed at
  // the new rate, so a queue pair cut deep and then recovered does not wait out a gap computed
  // at the old rate.
  void update_rate(Time now);
  // When a CC timer event is to be scheduled, or Time::max() if none (one is pending earlier).
  Time cc_timer_due(Time now);
  // Go-back-N: the next packet sent is `psn` (what was sent past it counts as retransmitted).
  void go_back_to(uint32_t psn);
  // An ACK (its PSN = the next PSN the responder expects): false if it acknowledges nothing
  // new; else the congestion control hears of it (bytes counted as full `mtu` packets).
  bool on_ack(const Packet& ack, Time now, Time ack_timeout, int64_t mtu);
  // A NAK (a sequence error at `psn`): false if stale; else it acknowledges what precedes
  // `psn` and rewinds to it.
  bool on_nak(uint32_t psn, Time now, Time ack_timeout);
  // The next message of a connection QP that is now wholly acknowledged: true and its
  // sequence number on the connection, or false when none is.
  bool take_acked_message(uint64_t& sequence);
};

// The receiving end: PSN check, in-order delivery, and the ACK or NAK to answer with.
struct ResponderQp {
  uint32_t flow = 0;
  int src = 0;
  uint32_t sender_qp = 0;
  uint32_t packets = 0;
  uint32_t hash = 0;
  int dscp = 0;
  int priority = 0;
  uint32_t expected_psn = 0;
  bool nak_outstanding = false;
  int64_t bytes = 0;
  Time last_byte{};
  NotificationPoint::QpState congestion;  // the notification point's memory of this QP
  bool ce_to_echo = false;                // CE-marked data arrived since the last reply
  bool connection = false;                // `flow` is then the connection id
  uint32_t lane = 0, lanes = 1;

  // What a data packet asks of the NIC.
  struct Response {
    bool message_arrived = false;  // a connection message is complete, in order
    uint64_t sequence = 0;         // its sequence number on the connection
    bool reply = false;            // send `reply_type`
    PacketType reply_type = PacketType::Ack;
  };
  // The PSN check of data packet `p` arriving at `now`: in order it is delivered and ACKed
  // every `ack_every` packets, at the end and at a message's end; ahead of the expected PSN it
  // is NAKed once per gap; behind it (a duplicate) it is re-acknowledged.
  Response on_data(const Packet& p, Time now, int ack_every);
  // Addresses `a` (sent by `host`) to the requester of this QP.
  void address_reply(Packet& a, int host) const;
  // Fills `a` as an ACK or NAK carrying the next expected PSN, echoing `timestamp` (of the
  // data packet that triggered it) and whether CE-marked data arrived since the last reply.
  void write_reply(Packet& a, PacketType type, int host, Time timestamp);
};

}  // namespace fabtwin
