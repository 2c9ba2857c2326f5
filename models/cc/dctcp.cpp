#include "models/cc/dctcp.h"

#include <algorithm>

namespace fabtwin {
namespace {

using Bound = BoundParams<DctcpConfig>;

void check(ParamReader& r, const DctcpConfig& c) {
  if (c.initial_window < c.min_window) {
    throw ScenarioError(r.path_of("initial_window"),
                        "expected initial_window >= min_window, found " +
                            format_bytes(Bytes{c.initial_window}) + " < " +
                            format_bytes(Bytes{c.min_window}));
  }
}

const Bound kDctcpParams{
    "nic.cc[algorithm=dctcp]",
    "dctcp",
    "Congestion control: DCTCP window",
    {
        Bound::field(&DctcpConfig::initial_window,
                     {"initial_window", ParamType::Bytes, "\"128KB\"",
                      "bytes in flight a queue pair may start with (no slow start)",
                      "fabtwin: about one bandwidth-delay product of 100 Gb/s over a 10 us "
                      "round trip"}),
        Bound::field(&DctcpConfig::min_window,
                     {"min_window", ParamType::Bytes, "\"0B\"",
                      "floor of the window; it never goes below one packet (nic.mtu) either",
                      "Linux keeps at least 2 segments; fabtwin 1 packet"}),
        Bound::field(&DctcpConfig::g,
                     {"g", ParamType::Probability, "0.0625",
                      "alpha gain: alpha <- (1 - g) alpha + g F once per window",
                      "DCTCP paper section 3.4 g = 1/16; Linux dctcp_shift_g = 4"}),
        Bound::field(&DctcpConfig::initial_alpha,
                     {"initial_alpha", ParamType::Probability, "1",
                      "alpha before the first window is measured (1: the first mark halves the "
                      "window)",
                      "Linux tcp_dctcp.c dctcp_alpha_on_init = 1024/1024"}),
    },
    check};

}  // namespace

const BoundParams<DctcpConfig>& dctcp_params() {
  return kDctcpParams;
}

Dctcp::Dctcp(const DctcpConfig& config, BitsPerSec line_rate, int64_t mss)
    : g_(config.g),
      line_(line_rate),
      mss_(mss),
      floor_(std::max(config.min_window, mss)),
      cwnd_(std::max(config.initial_window, floor_)),
      alpha_(config.initial_alpha) {}

void Dctcp::on_ack(const AckRecord& a) {
  acked_ += a.acked_bytes;
  limited_ |= a.in_flight + a.acked_bytes + mss_ > cwnd_;
  if (a.ece) {
    marked_ += a.acked_bytes;
    if (!cut_) {  // the first mark of a window cuts, once
      cwnd_ = std::max(floor_, static_cast<int64_t>(static_cast<double>(cwnd_) * (1 - alpha_ / 2)));
      cut_ = true;
      ++cuts_;
    }
  }
  if (a.psn < window_end_) return;
  // A window of data is acknowledged: alpha takes its fraction of marked bytes, and a window
  // without marks that the window limited grows by one packet.
  const double f = acked_ > 0 ? static_cast<double>(marked_) / static_cast<double>(acked_) : 0.0;
  alpha_ = (1 - g_) * alpha_ + g_ * f;
  if (!cut_ && limited_) cwnd_ += mss_;
  window_end_ = a.next_psn;
  acked_ = marked_ = 0;
  cut_ = limited_ = false;
}

}  // namespace fabtwin
