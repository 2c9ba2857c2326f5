// TIMELY (Mittal et al., SIGCOMM 2015): a queue pair's rate steered by the RTT and its gradient.
// Once per completion event (`segment` bytes acknowledged, or a round trip if that comes first)
// the RTT of the ACK ending it updates
// rtt_diff <- (1 - a) rtt_diff + a (rtt - prev_rtt); below T_low the rate grows by delta, above
// T_high it is cut by beta (1 - T_high / rtt), in between a non-positive gradient
// rtt_diff / min_rtt adds delta (hai_factor x delta after hai_after increases in a row) and a
// positive one cuts the rate by beta x gradient.
#pragma once

#include "models/cc/congestion_control.h"
#include "sim/params.h"

namespace fabtwin {

struct TimelyConfig {
  Time t_low{};
  Time t_high{};
  Time min_rtt{};      // normalizes the gradient
  BitsPerSec delta{};  // additive increment
  double beta = 0;     // multiplicative decrease
  double ewma_alpha = 0;
  int hai_after = 0;    // increases in a row before hyperactive increase
  int hai_factor = 0;   // N: the hyperactive step is N x delta
  int64_t segment = 0;  // payload bytes acknowledged between rate updates (0: every ACK)
  BitsPerSec min_rate{};

  bool operator==(const TimelyConfig&) const = default;
};

const BoundParams<TimelyConfig>& timely_params();

class Timely final : public CongestionControl {
 public:
  Timely(const TimelyConfig& config, BitsPerSec line_rate);

  BitsPerSec rate() const override { return {static_cast<int64_t>(rate_)}; }
  void on_ack(const AckRecord& ack) override;
  CcState state(Time now) const override { return {rate(), rate(), gradient_, cuts_}; }

 private:
  void update(Time rtt);

  const TimelyConfig& c_;
  double line_;
  double rate_;
  int64_t segment_acked_ = 0;  // bytes acknowledged since the last update
  uint32_t round_end_ = 0;     // the next PSN at the last update: a round trip ends past it
  bool have_rtt_ = false;
  double prev_rtt_ = 0;  // ps
  double rtt_diff_ = 0;  // ps
  double gradient_ = 0;
  int increases_ = 0;  // rate increases in a row
  int64_t cuts_ = 0;
};

}  // namespace fabtwin
