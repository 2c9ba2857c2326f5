// DCTCP (Alizadeh et al., SIGCOMM 2010) as a queue pair's window: the fraction F of ECN-echoed
// bytes in each window of data feeds alpha <- (1 - g) alpha + g F; a window with marks cuts
// cwnd <- cwnd (1 - alpha / 2) once, a window without grows it by one packet. The switches mark
// with a step at K (fabric.ecn kmin = kmax = K, pmax = 1).
#pragma once

#include "models/cc/congestion_control.h"
#include "sim/params.h"

namespace fabtwin {

struct DctcpConfig {
  int64_t initial_window = 0;  // bytes
  int64_t min_window = 0;      // bytes; the window never goes below one packet either
  double g = 0;                // alpha gain
  double initial_alpha = 0;

  bool operator==(const DctcpConfig&) const = default;
};

const BoundParams<DctcpConfig>& dctcp_params();

class Dctcp final : public CongestionControl {
 public:
  // `mss`: payload bytes of a full packet (the path MTU).
  Dctcp(const DctcpConfig& config, BitsPerSec line_rate, int64_t mss);

  BitsPerSec rate() const override { return line_; }
  int64_t window() const override { return cwnd_; }
  void on_ack(const AckRecord& ack) override;
  CcState state(Time now) const override { return {line_, line_, alpha_, cuts_}; }

 private:
  double g_;
  BitsPerSec line_;
  int64_t mss_;
  int64_t floor_;
  int64_t cwnd_;
  double alpha_;
  // The window being observed: it ends when every PSN sent before it began is acknowledged.
  uint32_t window_end_ = 0;
  int64_t acked_ = 0;
  int64_t marked_ = 0;
  bool cut_ = false;      // the window's first mark has cut cwnd
  bool limited_ = false;  // the window was full at some ACK: sending was window-limited
  int64_t cuts_ = 0;
};

}  // namespace fabtwin
