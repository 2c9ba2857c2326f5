// DCQCN (Zhu et al., SIGCOMM 2015): the reaction point on the sender NIC, which cuts its rate
// on each congestion notification and recovers it by timer and byte counter (fast recovery,
// additive and hyper increase), and the notification point on the receiver NIC, which answers
// ECN-marked arrivals with at most one CNP per interval. Parameters carry the ConnectX knob
// names; two profiles give the paper's values and the ConnectX firmware's.
#pragma once

#include <string>

#include "models/cc/congestion_control.h"
#include "sim/params.h"

namespace fabtwin {

struct DcqcnConfig {
  std::string profile = "paper";
  // Reaction point.
  Time rpg_time_reset{};              // T: rate-increase timer period (0: timer off)
  int64_t rpg_byte_reset = 0;         // B: bytes between byte-counter increase events (0: off)
  int rpg_threshold = 5;              // F: fast-recovery stages before additive increase
  bool fast_recovery_f = false;       // true: F pure fast-recovery steps; false: F - 1
  bool hyper_linear = false;          // true: hyper increase adds R_HAI per event, T and B kept
  BitsPerSec rpg_ai_rate{};           // R_AI
  BitsPerSec rpg_hai_rate{};          // R_HAI
  int rpg_gd = 11;                    // cut: R_C (1 - alpha / 2^(gd-10))
  int rpg_min_dec_fac = 0;            // percent: a cut keeps at least this share of the rate
  BitsPerSec rpg_min_rate{};          // floor of R_C
  Time rate_reduce_monitor_period{};  // at most one cut per period (0: every CNP cuts)
  bool monitor_periodic = false;      // true: cuts at the ends of a fixed grid of periods
  int dce_tcp_g = 1020;               // alpha gain g = 1 - dce_tcp_g / 1024
  Time dce_tcp_rtt{};                 // alpha update period (K in the paper)
  bool alpha_periodic = false;        // true: firmware rule, alpha updated every period
  int initial_alpha_value = 1024;     // alpha at the first CNP, in 1/1024
  bool clamp_tgt_rate = false;
  bool clamp_tgt_rate_after_time_inc = false;
  BitsPerSec rate_to_set_on_first_cnp{};  // 0: off
  // Congestion notification: CNP frames from the notification point (false), or the ECN echo
  // of ACKs, with no CNP frames (true).
  bool ack_echo = false;
  // Notification point.
  Time min_time_between_cnps{};
  int cnp_dscp = 48;
  Time cnp_delay{};  // from the CE-marked arrival to the CNP joining the NIC's port

  double g() const { return 1.0 - dce_tcp_g / 1024.0; }
  // Pure fast-recovery events of a counter after a cut (fast_recovery_steps F or F-1); the
  // next event leaves fast recovery.
  int fast_recovery_events() const { return rpg_threshold - (fast_recovery_f ? 0 : 1); }

  bool operator==(const DcqcnConfig&) const = default;
};

// DCQCN's knobs in nic.cc (with nic.cc.algorithm "dcqcn"): "profile" ("paper" | "connectx")
// sets every knob, and any knob written beside it overrides its profile value.
const BoundParams<DcqcnConfig>& dcqcn_params();

class DcqcnReactionPoint final : public CongestionControl {
 public:
  DcqcnReactionPoint(const DcqcnConfig& config, BitsPerSec line_rate);

  BitsPerSec rate() const override { return {static_cast<int64_t>(rate_)}; }
  void on_packet_sent(int64_t bytes, Time now) override;
  void on_ack(const AckRecord& ack) override;
  void on_cnp(Time now) override;
  Time next_timer() const override;
  void on_timer(Time now) override;
  CcState state(Time now) const override;

 private:
  double alpha_at(Time now) const;  // alpha with the decay owed up to `now` applied
  void settle_alpha(Time now);
  void cut(Time now);
  void increase(bool by_timer, Time now);
  bool hyper() const;  // every running counter has left fast recovery

  const DcqcnConfig& c_;
  double line_;
  double rate_;
  double target_;
  double alpha_;
  Time alpha_time_{};           // alpha_ is exact as of this time
  bool cnp_in_period_ = false;  // periodic mode: a CNP arrived in the period being counted
  bool active_ = false;         // a CNP has been received and the rate is below line rate
  bool cut_pending_ = false;    // a CNP arrived inside the monitor period
  Time cut_due_{};              // when the pending cut is applied
  Time last_cut_{};
  Time first_cnp_{};  // origin of the periodic monitor's grid
  Time next_increase_ = Time::max();
  int64_t bytes_left_ = 0;
  int byte_stage_ = 0;
  int time_stage_ = 0;
  int64_t cnps_ = 0;
  int64_t cuts_ = 0;
};

}  // namespace fabtwin
