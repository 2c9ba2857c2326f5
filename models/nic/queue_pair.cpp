#include "models/nic/queue_pair.h"

#include <algorithm>

#include "models/net/roce_framing.h"

namespace fabtwin {

void RequesterQp::post_message(int64_t bytes, int64_t mtu, Time now, Time ack_timeout) {
  const int64_t n = std::max<int64_t>(1, (bytes + mtu - 1) / mtu);
  packets += static_cast<uint32_t>(n);
  flow.size.count += bytes;
  messages.emplace_back(packets, static_cast<int32_t>(bytes - (n - 1) * mtu));
  if (unacked_psn + n == packets) deadline = now + ack_timeout;
}

void RequesterQp::write_next_packet(Packet& p, uint32_t index, int host, int64_t mtu) {
  const uint32_t psn = next_psn++;
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
    if (cursor > 0 && psn < messages[cursor - 1].first) {
      cursor = static_cast<uint32_t>(
          std::upper_bound(messages.begin(), messages.end(), psn,
                           [](uint32_t v, const auto& m) { return v < m.first; }) -
          messages.begin());
    }
    while (messages[cursor].first <= psn) ++cursor;
    const auto [end, last_payload] = messages[cursor];
    first = psn == (cursor == 0 ? 0 : messages[cursor - 1].first);
    p.payload = psn + 1 == end ? last_payload : static_cast<int32_t>(mtu);
    if (psn + 1 == end) p.message = cursor + 1;
  } else {
    const int64_t offset = static_cast<int64_t>(psn) * mtu;
    p.payload = static_cast<int32_t>(std::min<int64_t>(mtu, flow.size.count - offset));
  }
  p.frame = roce::data_frame(p.payload, first);
  p.priority = static_cast<uint8_t>(priority);
  p.dscp = static_cast<uint8_t>(flow.dscp);
  p.ecn = Ecn::Ect0;
}

void RequesterQp::on_packet_sent(const Packet& p, Time now, Time ack_timeout,
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

void RequesterQp::update_rate(Time now) {
  const BitsPerSec r = cc->rate();
  if (r == rate) return;
  rate = r;
  if (next_send > now && last_frame > 0) {
    next_send = std::min(next_send, last_sent + roce::wire_time(last_frame, r));
  }
}

Time RequesterQp::cc_timer_due(Time now) {
  const Time t = std::max(cc->next_timer(), now);  // due while the QP was idle: now
  if (t == Time::max() || t >= cc_timer_at) return Time::max();
  cc_timer_at = t;
  return t;
}

void RequesterQp::go_back_to(uint32_t psn) {
  if (psn < next_psn) record.packets_retransmitted += next_psn - psn;
  next_psn = psn;
}

bool RequesterQp::on_ack(const Packet& ack, Time now, Time ack_timeout, int64_t mtu) {
  if (done || ack.psn <= unacked_psn) return false;
  const uint32_t acked = ack.psn - unacked_psn;
  unacked_psn = ack.psn;
  if (next_psn < unacked_psn) next_psn = unacked_psn;
  deadline = now + ack_timeout;
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

bool RequesterQp::on_nak(uint32_t psn, Time now, Time ack_timeout) {
  if (done || psn < unacked_psn) return false;
  unacked_psn = psn;  // a NAK also acknowledges everything before it
  deadline = now + ack_timeout;
  return true;
}

bool RequesterQp::take_acked_message(uint64_t& sequence) {
  if (acked_messages >= messages.size() || messages[acked_messages].first > unacked_psn) {
    return false;
  }
  sequence = uint64_t{acked_messages++} * lanes + lane;
  return true;
}

ResponderQp::Response ResponderQp::on_data(const Packet& p, Time now, int ack_every) {
  Response r;
  if (p.ecn == Ecn::Ce) ce_to_echo = true;
  if (p.psn == expected_psn) {
    ++expected_psn;
    bytes += p.payload;
    nak_outstanding = false;
    if (expected_psn == packets) last_byte = now;
    if (connection && p.message != 0) {
      r.message_arrived = true;
      r.sequence = uint64_t{p.message - 1} * lanes + lane;
    }
    r.reply = expected_psn % static_cast<uint32_t>(ack_every) == 0 || expected_psn == packets ||
              p.message != 0;
  } else if (p.psn > expected_psn) {
    // Sequence error: one NAK per gap (IB responder behaviour); the requester goes back.
    if (!nak_outstanding) {
      nak_outstanding = true;
      r.reply = true;
      r.reply_type = PacketType::Nak;
    }
  } else {
    r.reply = true;  // duplicate: re-acknowledge what we have
  }
  return r;
}

void ResponderQp::address_reply(Packet& a, int host) const {
  a.flow = flow;
  a.src_host = static_cast<uint32_t>(host);
  a.dst_host = static_cast<uint32_t>(src);
  a.sender_qp = sender_qp;
  a.ecmp_hash = hash;
}

void ResponderQp::write_reply(Packet& a, PacketType type, int host, Time timestamp) {
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
