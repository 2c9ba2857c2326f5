#include "models/nic/queue_pair.h"

namespace fabtwin {

void RequesterQp::post_message(int64_t bytes, int64_t mtu, Time now, Time ack_timeout) {
  const int64_t n = std::max<int64_t>(1, (bytes + mtu - 1) / mtu);
  packets += static_cast<uint32_t>(n);
  flow.size.count += bytes;
  messages.emplace_back(packets, static_cast<int32_t>(bytes - (n - 1) * mtu));
  if (unacked_psn + n == packets) deadline = now + ack_timeout;
}

void RequesterQp::go_back_to(uint32_t psn) {
  if (psn < next_psn) record.packets_retransmitted += next_psn - psn;
  next_psn = psn;
}

bool RequesterQp::take_acked_message(uint64_t& sequence) {
  if (acked_messages >= messages.size() || messages[acked_messages].first > unacked_psn) {
    return false;
  }
  sequence = uint64_t{acked_messages++} * lanes + lane;
  return true;
}

}  // namespace fabtwin
