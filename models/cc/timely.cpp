#include "models/cc/timely.h"

#include <algorithm>

namespace fabtwin {
namespace {

using Bound = BoundParams<TimelyConfig>;

void check(ParamReader& r, const TimelyConfig& c) {
  if (c.min_rtt.ps <= 0) {
    throw ScenarioError(r.path_of("min_rtt"),
                        "expected a positive time, found " + format_time(c.min_rtt));
  }
  if (c.t_high <= c.t_low) {
    throw ScenarioError(
        r.path_of("t_high"),
        "expected t_high > t_low, found " + format_time(c.t_high) + " <= " + format_time(c.t_low));
  }
}

// The paper's values are for 10 Gb/s; at 100 Gb/s the same dynamics run ten times faster: times
// are divided by 10 and rate steps multiplied by 10 (the segment stays in bytes).
const Bound kTimelyParams{
    "nic.cc[algorithm=timely]",
    "timely",
    "Congestion control: TIMELY",
    {
        Bound::field(&TimelyConfig::t_low,
                     {"t_low", ParamType::Time, "\"5us\"",
                      "below this RTT the rate grows by delta whatever the gradient",
                      "TIMELY paper T_low = 50 us at 10 Gb/s, scaled to 100 Gb/s"}),
        Bound::field(&TimelyConfig::t_high,
                     {"t_high", ParamType::Time, "\"50us\"",
                      "above this RTT the rate is cut by beta (1 - t_high / rtt)",
                      "TIMELY paper T_high = 500 us at 10 Gb/s, scaled to 100 Gb/s"}),
        Bound::field(&TimelyConfig::min_rtt,
                     {"min_rtt", ParamType::Time, "\"2us\"",
                      "the fabric's propagation RTT, which normalizes the RTT gradient",
                      "HPCC authors' ns-3 TIMELY minRtt = 20 us at 10 Gb/s, scaled to 100 Gb/s"}),
        Bound::field(
            &TimelyConfig::delta,
            {"delta", ParamType::Rate, "\"100Mbps\"", "additive increment delta of the rate",
             "TIMELY paper delta = 10 Mbps at 10 Gb/s, scaled to 100 Gb/s"}),
        Bound::field(&TimelyConfig::beta,
                     {"beta", ParamType::Probability, "0.8", "multiplicative decrease factor",
                      "TIMELY paper beta = 0.8"}),
        Bound::field(&TimelyConfig::ewma_alpha,
                     {"ewma_alpha", ParamType::Probability, "0.875",
                      "weight of the newest RTT difference in rtt_diff",
                      "TIMELY paper alpha = 0.875 (HPCC authors' ns-3 TimelyAlpha)"}),
        Bound::field(&TimelyConfig::hai_after,
                     {"hai_after", ParamType::Integer, "5",
                      "increases in a row after which a non-positive gradient adds hai_factor x "
                      "delta (hyperactive increase)",
                      "TIMELY paper: N = 5 after 5 completion events", "1..1000"}),
        Bound::field(&TimelyConfig::hai_factor, {"hai_factor", ParamType::Integer, "5",
                                                 "N: the hyperactive increment is N x delta",
                                                 "TIMELY paper N = 5", "1..1000"}),
        Bound::field(&TimelyConfig::segment,
                     {"segment", ParamType::Bytes, "\"64KB\"",
                      "payload bytes acknowledged between rate updates, the paper's completion "
                      "event; a flow too slow to complete one per round trip updates once per "
                      "round trip (when what it had sent at the last update is acknowledged); "
                      "0B updates on every ACK",
                      "TIMELY paper: one update per completion of a 16-64 KB segment"}),
        Bound::field(&TimelyConfig::min_rate, {"min_rate", ParamType::Rate, "\"100Mbps\"",
                                               "floor of the rate", "HPCC authors' ns-3 MinRate"}),
    },
    check};

}  // namespace

const BoundParams<TimelyConfig>& timely_params() {
  return kTimelyParams;
}

Timely::Timely(const TimelyConfig& config, BitsPerSec line_rate)
    : c_(config), line_(static_cast<double>(line_rate.bps)), rate_(line_) {}

void Timely::on_ack(const AckRecord& a) {
  segment_acked_ += a.acked_bytes;
  if (segment_acked_ < c_.segment && a.psn < round_end_) return;
  segment_acked_ = 0;
  round_end_ = a.next_psn;
  update(a.rtt);
}

void Timely::update(Time rtt_time) {
  const double rtt = static_cast<double>(rtt_time.ps);
  if (!have_rtt_) {  // the first sample has no predecessor: its difference is 0
    prev_rtt_ = rtt;
    have_rtt_ = true;
  }
  const double new_rtt_diff = rtt - prev_rtt_;
  prev_rtt_ = rtt;
  const double a = c_.ewma_alpha;
  rtt_diff_ = (1 - a) * rtt_diff_ + a * new_rtt_diff;
  gradient_ = rtt_diff_ / static_cast<double>(c_.min_rtt.ps);
  const double delta = static_cast<double>(c_.delta.bps);
  double factor = 1;  // multiplicative decrease, when below 1
  if (rtt < static_cast<double>(c_.t_low.ps)) {
    rate_ += delta;
    ++increases_;
  } else if (rtt > static_cast<double>(c_.t_high.ps)) {
    factor = 1 - c_.beta * (1 - static_cast<double>(c_.t_high.ps) / rtt);
  } else if (gradient_ <= 0) {
    rate_ += increases_ >= c_.hai_after ? c_.hai_factor * delta : delta;
    ++increases_;
  } else {
    factor = 1 - c_.beta * gradient_;
  }
  if (factor < 1) {
    rate_ *= std::max(0.0, factor);
    increases_ = 0;
    ++cuts_;
  }
  rate_ = std::min(line_, std::max(rate_, static_cast<double>(c_.min_rate.bps)));
}

}  // namespace fabtwin
