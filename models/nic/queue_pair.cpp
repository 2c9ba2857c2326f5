#include "models/nic/queue_pair.h"

namespace fabtwin {

void RequesterQp::post_message(int64_t bytes, int64_t mtu, Time now, Time ack_timeout,
                               bool immediate) {
  const int64_t data = std::max<int64_t>(1, (bytes + mtu - 1) / mtu);
  const int64_t n = data + (immediate ? 1 : 0);
  packets += static_cast<uint32_t>(n);
  flow.size.count += bytes;
  messages.push_back({packets, static_cast<int32_t>(bytes - (data - 1) * mtu), immediate});
  if (unacked_psn + n == packets) deadline = now + ack_timeout;
}

void RequesterQp::go_back_to(uint32_t psn) {
  if (psn < next_psn) record.packets_retransmitted += next_psn - psn;
  next_psn = psn;
}

bool RequesterQp::take_acked_message(uint64_t& sequence) {
  if (acked_messages >= messages.size() || messages[acked_messages].end > unacked_psn) {
    return false;
  }
  sequence = uint64_t{acked_messages++} * lanes + lane;
  return true;
}

void RequesterQp::on_timeout() {
  ++record.timeouts;
  if (!selective()) {
    go_back_to(unacked_psn);
    return;
  }
  // IRN: every packet in flight that the responder has not SACKed is resent.
  recovery = true;
  resend_next = unacked_psn;
  recovery_end = next_psn;
}

void RequesterQp::sack_advance(uint32_t from, Time rtt) {
  for (uint32_t psn = from; psn != unacked_psn; ++psn) sacked.clear(psn);
  if (recovery && unacked_psn >= recovery_end) recovery = false;
  if (rtt < min_rtt) {
    min_rtt = rtt;
    if (bdp_auto) {
      bdp_cap = std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(line_rate.bps) * rtt.seconds() / 8.0));
    }
  }
}

bool RequesterQp::on_sack(uint32_t psn) {
  if (done || psn < unacked_psn || psn >= next_psn || psn - unacked_psn >= sacked.capacity()) {
    return false;
  }
  sacked.set(psn);
  if (!recovery) {
    recovery = true;
    resend_next = unacked_psn;
    recovery_end = psn + 1;
    return true;
  }
  if (psn + 1 <= recovery_end) return false;
  recovery_end = psn + 1;
  return true;
}

uint32_t RequesterQp::next_hole() {
  uint32_t psn = std::max(resend_next, unacked_psn);
  const uint32_t end = std::min(recovery_end, next_psn);
  while (psn < end && sacked.test(psn)) ++psn;
  resend_next = psn;
  return psn < end ? psn : kNoHole;
}

void ResponderQp::set_mode(ReceiverMode m, int window) {
  mode = m;
  if (m == ReceiverMode::GoBackN) return;
  placed.reset(static_cast<uint32_t>(window));
  if (connection) ends.reset(static_cast<uint32_t>(window));
}

ResponderQp::Response ResponderQp::on_data_placed(const Packet& p, Time now, int ack_every) {
  Response r;
  if (p.ecn == Ecn::Ce) ce_to_echo = true;
  if (p.psn < expected_psn || (p.psn < highest_psn && placed.test(p.psn))) {
    ++counters.duplicates;
    r.reply = true;  // re-acknowledge what we have
    return r;
  }
  if (p.psn > expected_psn) {
    const uint32_t depth = p.psn - expected_psn;
    ++counters.out_of_sequence;
    counters.max_reorder_depth = std::max(counters.max_reorder_depth, depth);
    if (depth < placed.capacity()) {  // placed; further ahead it is dropped
      placed.set(p.psn);
      if (connection && p.message != 0) ends.set(p.psn);
      bytes += p.payload;
      highest_psn = std::max(highest_psn, p.psn + 1);
      if (mode == ReceiverMode::SelectiveRepeat) {
        ++counters.sacks_sent;
        r.reply = true;
        r.reply_type = PacketType::Sack;
        r.sacked_psn = p.psn;
        return r;
      }
    }
    if (mode == ReceiverMode::OutOfOrder && !hole_timer) {
      hole_timer = true;
      hole_psn = expected_psn;
      r.arm_hole_timer = true;
    }
    return r;
  }
  // In order: delivered, and with it the placed packets that follow.
  bytes += p.payload;
  const auto complete_message = [&] {
    if (r.messages++ == 0) r.sequence = uint64_t{messages_arrived} * lanes + lane;
    ++messages_arrived;
  };
  if (connection && p.message != 0) complete_message();
  const uint32_t before = expected_psn++;
  while (expected_psn < highest_psn && placed.test(expected_psn)) {
    placed.clear(expected_psn);
    if (connection && ends.test(expected_psn)) {
      ends.clear(expected_psn);
      complete_message();
    }
    ++expected_psn;
  }
  if (expected_psn >= packets) last_byte = now;
  r.reply = expected_psn - before > 1 || expected_psn % static_cast<uint32_t>(ack_every) == 0 ||
            expected_psn == packets || r.messages > 0;
  return r;
}

bool ResponderQp::on_hole_timer() {
  hole_timer = false;
  const bool open = expected_psn == hole_psn;
  if (open) ++counters.naks_sent;
  if (highest_psn > expected_psn) {  // a hole remains: its age counts from now
    hole_timer = true;
    hole_psn = expected_psn;
  }
  return open;
}

}  // namespace fabtwin
