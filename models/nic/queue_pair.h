// The two ends of a reliable-connected (RC) queue pair. The requester segments each message
// into MTU-sized packets, paces them at its rate and recovers losses go-back-N on a NAK or a
// timeout, or (selective repeat) resends only the holes the responder's SACKs reveal; the
// responder checks PSNs, delivers in order or places out of order (receiver_mode.h) and
// answers with ACKs, NAKs and SACKs.
// Both ends are state and rules only: the NIC owning them schedules their events and puts their
// packets on the wire.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "models/cc/congestion_control.h"
#include "models/net/packet.h"
#include "models/net/roce_framing.h"
#include "models/nic/notification_point.h"
#include "models/nic/psn_bitmap.h"
#include "models/nic/receiver_mode.h"
#include "models/traffic/flow.h"

namespace fabtwin {

// Packets of `bytes` split at `mtu` payload bytes (0 for an empty flow).
// The immediate data header (ImmDt) of an RDMA WRITE with immediate.
inline constexpr int kImmediateBytes = 4;

inline int64_t packet_count(int64_t bytes, int64_t mtu) {
  return bytes / mtu + (bytes % mtu != 0 ? 1 : 0);
}
// The same as a PSN count: FabricSpec refuses a flow of more than kMaxFlowPackets.
inline constexpr int64_t kMaxFlowPackets = UINT32_MAX;
inline uint32_t packets_of(int64_t bytes, int64_t mtu) {
  return static_cast<uint32_t>(packet_count(bytes, mtu));
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
  Time rnr_until{};                       // SEND: an RNR NAK holds the QP until then
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
  struct PostedMessage {
    uint32_t end;          // one past its last PSN
    int32_t last_payload;  // payload of its last data packet
    bool immediate;        // a zero-byte write with immediate follows the data (NCCL's AR mode)
  };
  std::vector<PostedMessage> messages;
  uint32_t cursor = 0;
  uint32_t acked_messages = 0;
  // A flow spread over several QPs (nic.qps_per_flow): the index of its first QP, which counts
  // the parts not yet complete.
  uint32_t first_part = 0;
  uint32_t parts_left = 1;
  // Selective repeat (IRN): the PSNs past unacked_psn the responder SACKed, the recovery
  // episode's range of holes to resend, and the cap on bytes in flight (0: none yet).
  ReceiverMode mode = ReceiverMode::GoBackN;
  PsnBitmap sacked;
  bool recovery = false;
  uint32_t resend_next = 0;   // the next PSN to look at for a resend
  uint32_t recovery_end = 0;  // one past the highest PSN SACKed (or sent, after a timeout)
  int64_t bdp_cap = 0;        // bytes; 0: no cap (auto: set from the first RTT sample)
  bool bdp_auto = false;
  Time min_rtt = Time::max();
  BitsPerSec line_rate{};
  static constexpr uint32_t kNoHole = UINT32_MAX;

  bool all_sent() const { return next_psn >= packets; }
  bool selective() const { return mode == ReceiverMode::SelectiveRepeat; }
  bool all_acked() const { return unacked_psn >= packets; }
  // Payload bytes sent and not yet acknowledged, counting every packet as a full `mtu`.
  int64_t in_flight(int64_t mtu) const { return int64_t{next_psn - unacked_psn} * mtu; }
  // The congestion control's window has room for one more packet.
  bool window_open(int64_t mtu) const { return !cc || in_flight(mtu) + mtu <= cc->window(); }

  // A message of `bytes` (an RDMA WRITE; an empty one is still one packet) joins the queue.
  // `immediate`: the data goes as a plain WRITE and a zero-byte WRITE with immediate, one more
  // packet after it, completes the message at the responder.
  void post_message(int64_t bytes, int64_t mtu, Time now, Time ack_timeout, bool immediate = false);
  // Segmentation: fills `p` as the data packet of the next PSN (`index`: this QP's index).
  void write_next_packet(Packet& p, uint32_t index, int host, int64_t mtu);
  // The same for any PSN already sent or the next one (a selective-repeat resend).
  void write_packet(Packet& p, uint32_t psn, uint32_t index, int host, int64_t mtu);
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
  // The retransmission timer expired: go-back-N rewinds to unacked_psn; selective repeat
  // resends every unSACKed packet in flight. Counts the timeout.
  void on_timeout();

  // Selective repeat. The cumulative part of a SACK is an ACK (on_ack); then `psn` is marked
  // received: true if that opened or widened a recovery (holes to resend).
  bool on_sack(uint32_t psn);
  // The oldest hole of the recovery not yet resent, or kNoHole.
  uint32_t next_hole();
  // A new packet fits under the BDP cap and the SACK window.
  bool cap_open(int64_t mtu) const {
    const uint32_t outstanding = next_psn - unacked_psn;
    return outstanding + 1 < sacked.capacity() &&
           (bdp_cap == 0 || int64_t{outstanding + 1} * mtu <= bdp_cap);
  }
  // Something to send: a new packet, or a hole to resend.
  bool sends_pending() { return !all_sent() || (recovery && next_hole() != kNoHole); }
  // IRN's timeout: rto_low with few packets in flight, else rto_high.
  Time retransmit_timeout(const ReceiverConfig& c) const {
    return next_psn - unacked_psn <= static_cast<uint32_t>(c.rto_low_packets) ? c.rto_low
                                                                              : c.rto_high;
  }

 private:
  // Selective repeat: the cumulative ACK moved from `from` to unacked_psn; `rtt` was sampled.
  void sack_advance(uint32_t from, Time rtt);
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
  // Out-of-order placement and selective repeat: the PSNs placed past expected_psn (and, of a
  // connection, those that end a message), one past the highest placed, the messages complete,
  // and the hole whose NAK timer runs (out_of_order).
  ReceiverMode mode = ReceiverMode::GoBackN;
  PsnBitmap placed;
  PsnBitmap ends;
  uint32_t highest_psn = 0;
  uint32_t messages_arrived = 0;
  uint32_t hole_psn = 0;
  bool hole_timer = false;
  ReceiverCounters counters;
  // SEND (receive_queue.h): the receive queue its message takes a WQE from, whether it holds
  // one, whether the receive completed (the WQE's repost is scheduled), and the RNR NAKs sent.
  int32_t receive_queue = -1;  // -1: a WRITE
  bool has_wqe = false;
  bool received = false;
  int64_t rnr_naks = 0;

  // What a data packet asks of the NIC.
  struct Response {
    uint32_t messages = 0;  // connection messages now complete, in order
    uint64_t sequence = 0;  // the first one's sequence number on the connection (then + lanes)
    bool reply = false;     // send `reply_type`
    PacketType reply_type = PacketType::Ack;
    uint32_t sacked_psn = 0;      // a SACK's out-of-order PSN
    bool arm_hole_timer = false;  // out_of_order: a hole opened; NAK it after nak_delay
  };
  // Sets the mode and allocates its bitmaps (`window` PSNs), once, at set-up.
  void set_mode(ReceiverMode m, int window);
  // The PSN check of data packet `p` arriving at `now`: in order it is delivered and ACKed
  // every `ack_every` packets, at the end and at a message's end; ahead of the expected PSN it
  // is NAKed once per gap; behind it (a duplicate) it is re-acknowledged.
  Response on_data(const Packet& p, Time now, int ack_every);
  // The same for out-of-order placement and selective repeat: a packet ahead of the expected
  // PSN is placed (and SACKed); the expected PSN then moves over the filled prefix.
  Response on_data_placed(const Packet& p, Time now, int ack_every);
  // out_of_order: the hole timer fired; true if the hole it was armed for is still open (the
  // NIC NAKs it). Re-arms itself (`hole_timer`) while a hole remains.
  bool on_hole_timer();
  // Addresses `a` (sent by `host`) to the requester of this QP.
  void address_reply(Packet& a, int host) const;
  // Fills `a` as an ACK or NAK carrying the next expected PSN, echoing `timestamp` (of the
  // data packet that triggered it) and whether CE-marked data arrived since the last reply.
  void write_reply(Packet& a, PacketType type, int host, Time timestamp);
};

// The per-packet operations are inline: they run for every packet a NIC sends or receives.

inline void RequesterQp::write_next_packet(Packet& p, uint32_t index, int host, int64_t mtu) {
  write_packet(p, next_psn++, index, host, mtu);
}

[[gnu::always_inline]] inline void RequesterQp::write_packet(Packet& p, uint32_t psn,
                                                             uint32_t index, int host,
                                                             int64_t mtu) {
  p.type = PacketType::Data;
  p.flow = flow.id;
  p.src_host = static_cast<uint32_t>(host);
  p.dst_host = static_cast<uint32_t>(flow.dst);
  p.sender_qp = index;
  p.receiver_qp = receiver_qp;
  p.psn = psn;
  p.ecmp_hash = hash;
  bool first = psn == 0;
  if (connection) {
    // The message holding this PSN (a go-back-N rewind may move back over several).
    if (cursor > 0 && psn < messages[cursor - 1].end) {
      cursor = static_cast<uint32_t>(
          std::upper_bound(messages.begin(), messages.end(), psn,
                           [](uint32_t v, const PostedMessage& m) { return v < m.end; }) -
          messages.begin());
    }
    while (messages[cursor].end <= psn) ++cursor;
    const PostedMessage& m = messages[cursor];
    first = psn == (cursor == 0 ? 0 : messages[cursor - 1].end);
    const uint32_t data_end = m.end - (m.immediate ? 1 : 0);
    p.payload = psn + 1 == data_end ? m.last_payload : static_cast<int32_t>(mtu);
    if (psn + 1 == m.end) p.message = cursor + 1;
    if (psn == data_end) [[unlikely]] {  // the WRITE with immediate: headers, RETH and ImmDt
      p.payload = 0;
      p.frame = roce::data_frame(0, true) + kImmediateBytes;
      p.priority = static_cast<uint8_t>(priority);
      p.dscp = static_cast<uint8_t>(flow.dscp);
      p.ecn = Ecn::Ect0;
      return;
    }
  } else {
    const int64_t offset = static_cast<int64_t>(psn) * mtu;
    p.payload = static_cast<int32_t>(std::min<int64_t>(mtu, flow.size.count - offset));
  }
  p.frame = roce::data_frame(p.payload, first && flow.verb == Verb::Write);
  p.priority = static_cast<uint8_t>(priority);
  p.dscp = static_cast<uint8_t>(flow.dscp);
  p.ecn = Ecn::Ect0;
}

inline void RequesterQp::on_packet_sent(const Packet& p, Time now, Time ack_timeout,
                                        BitsPerSec line_rate) {
  if (unacked_psn == p.psn) deadline = now + ack_timeout;
  if (cc) {
    cc->on_packet_sent(p.frame, now);
    update_rate(now);
  }
  last_sent = now;
  last_frame = p.frame;
  if (rate < line_rate) next_send = now + roce::wire_time(p.frame, rate);
  ++record.packets_sent;
}

inline void RequesterQp::update_rate(Time now) {
  const BitsPerSec r = cc->rate();
  if (r == rate) return;
  rate = r;
  if (next_send > now && last_frame > 0) {
    next_send = std::min(next_send, last_sent + roce::wire_time(last_frame, r));
  }
}

inline Time RequesterQp::cc_timer_due(Time now) {
  const Time t = std::max(cc->next_timer(), now);  // due while the QP was idle: now
  if (t == Time::max() || t >= cc_timer_at) return Time::max();
  cc_timer_at = t;
  return t;
}

inline bool RequesterQp::on_ack(const Packet& ack, Time now, Time ack_timeout, int64_t mtu) {
  if (done || ack.psn <= unacked_psn) return false;
  const uint32_t acked = ack.psn - unacked_psn;
  const uint32_t from = unacked_psn;
  unacked_psn = ack.psn;
  if (next_psn < unacked_psn) next_psn = unacked_psn;
  deadline = now + ack_timeout;
  if (selective()) [[unlikely]]
    sack_advance(from, now - ack.timestamp);
  if (cc) {
    AckRecord a;
    a.now = now;
    a.rtt = now - ack.timestamp;
    a.ece = ack.ece;
    a.psn = ack.psn;
    a.next_psn = next_psn;
    a.acked_bytes = int64_t{acked} * mtu;
    a.in_flight = in_flight(mtu);
    cc->on_ack(a);
    update_rate(now);
  }
  return true;
}

inline bool RequesterQp::on_nak(uint32_t psn, Time now, Time ack_timeout) {
  if (done || psn < unacked_psn) return false;
  unacked_psn = psn;  // a NAK also acknowledges everything before it
  deadline = now + ack_timeout;
  return true;
}

inline ResponderQp::Response ResponderQp::on_data(const Packet& p, Time now, int ack_every) {
  if (mode != ReceiverMode::GoBackN) [[unlikely]]
    return on_data_placed(p, now, ack_every);
  Response r;
  if (p.ecn == Ecn::Ce) ce_to_echo = true;
  if (p.psn == expected_psn) {
    ++expected_psn;
    bytes += p.payload;
    nak_outstanding = false;
    if (expected_psn == packets) last_byte = now;
    if (connection && p.message != 0) {
      r.messages = 1;
      r.sequence = uint64_t{p.message - 1} * lanes + lane;
    }
    r.reply = expected_psn % static_cast<uint32_t>(ack_every) == 0 || expected_psn == packets ||
              p.message != 0;
  } else if (p.psn > expected_psn) {
    // Sequence error: one NAK per gap (IB responder behaviour); the requester goes back.
    ++counters.out_of_sequence;
    counters.max_reorder_depth = std::max(counters.max_reorder_depth, p.psn - expected_psn);
    if (!nak_outstanding) {
      nak_outstanding = true;
      ++counters.naks_sent;
      r.reply = true;
      r.reply_type = PacketType::Nak;
    }
  } else {
    ++counters.duplicates;
    r.reply = true;  // duplicate: re-acknowledge what we have
  }
  return r;
}

inline void ResponderQp::address_reply(Packet& a, int host) const {
  a.flow = flow;
  a.src_host = static_cast<uint32_t>(host);
  a.dst_host = static_cast<uint32_t>(src);
  a.sender_qp = sender_qp;
  a.ecmp_hash = hash;
}

inline void ResponderQp::write_reply(Packet& a, PacketType type, int host, Time timestamp) {
  address_reply(a, host);
  a.type = type;
  a.psn = expected_psn;
  a.frame = roce::ack_frame();
  a.priority = static_cast<uint8_t>(priority);
  a.dscp = static_cast<uint8_t>(dscp);
  a.timestamp = timestamp;
  a.ece = ce_to_echo;
  ce_to_echo = false;
}

}  // namespace fabtwin
