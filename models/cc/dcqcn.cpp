#include "models/cc/dcqcn.h"

#include <algorithm>
#include <cmath>

namespace fabtwin {
namespace {

DcqcnConfig profile(const std::string& name) {
  DcqcnConfig c;
  c.profile = name;
  if (name == "paper") {
    c.rpg_time_reset = microseconds(55);
    c.rpg_byte_reset = 10'000'000;
    c.rpg_threshold = 5;
    c.rpg_ai_rate = {40'000'000};
    c.rpg_hai_rate = {200'000'000};
    c.rpg_min_dec_fac = 0;
    c.rpg_min_rate = {100'000'000};
    c.rate_reduce_monitor_period = Time{};
    c.dce_tcp_g = 1020;
    c.dce_tcp_rtt = microseconds(55);
    c.alpha_periodic = false;
    c.initial_alpha_value = 1024;
    c.clamp_tgt_rate = true;
    c.clamp_tgt_rate_after_time_inc = false;
    c.min_time_between_cnps = microseconds(50);
  } else {
    c.rpg_time_reset = microseconds(300);
    c.rpg_byte_reset = 32767;
    c.rpg_threshold = 1;
    c.rpg_ai_rate = {5'000'000};
    c.rpg_hai_rate = {50'000'000};
    c.rpg_min_dec_fac = 50;
    c.rpg_min_rate = {1'000'000};
    c.rate_reduce_monitor_period = microseconds(4);
    c.dce_tcp_g = 1019;
    c.dce_tcp_rtt = microseconds(1);
    c.alpha_periodic = true;
    c.initial_alpha_value = 1023;
    c.clamp_tgt_rate = false;
    c.clamp_tgt_rate_after_time_inc = true;
    c.min_time_between_cnps = microseconds(4);
  }
  return c;
}

using Bound = BoundParams<DcqcnConfig>;

// A knob whose default comes from the profile: read only when the scenario writes it.
template <typename T>
Bound::Entry knob(T DcqcnConfig::*member, Param param) {
  const std::string key = param.key;
  Bound::Read read = Bound::field(member, param).read;
  return Bound::custom(std::move(param), [key, read](ParamReader& r, DcqcnConfig& c) {
    if (r.has(key)) read(r, c);
  });
}

// A two-way choice held as a flag (true for `when_true`): read only when the scenario writes it.
Bound::Entry choice_flag(bool DcqcnConfig::*member, Param param, std::string when_true) {
  const std::string key = param.key;
  return Bound::custom(std::move(param), [key, member, when_true](ParamReader& r, DcqcnConfig& c) {
    if (r.has(key)) c.*member = r.choice(key) == when_true;
  });
}

void check(ParamReader& r, const DcqcnConfig& c) {
  if (c.dce_tcp_rtt.ps <= 0) {
    throw ScenarioError(r.path_of("dce_tcp_rtt"),
                        "expected a positive time, found " + format_time(c.dce_tcp_rtt));
  }
  if (c.rpg_time_reset.ps < 0) {
    throw ScenarioError(r.path_of("rpg_time_reset"), "expected a time >= 0 (0: timer off), found " +
                                                         format_time(c.rpg_time_reset));
  }
  if (c.rpg_byte_reset < 0) {
    throw ScenarioError(r.path_of("rpg_byte_reset"),
                        "expected a size >= 0 (0: byte counter off), found " +
                            format_bytes(Bytes{c.rpg_byte_reset}));
  }
  if (c.rpg_time_reset.ps == 0 && c.rpg_byte_reset == 0) {
    throw ScenarioError(
        r.path_of("rpg_byte_reset"),
        "expected the timer (rpg_time_reset) or the byte counter (rpg_byte_reset) to "
        "run, found both 0: the rate would never increase after a cut");
  }
  if (c.monitor_periodic && c.rate_reduce_monitor_period.ps <= 0) {
    throw ScenarioError(r.path_of("rate_reduce_monitor"),
                        "expected a positive rate_reduce_monitor_period with \"periodic\", found " +
                            format_time(c.rate_reduce_monitor_period));
  }
}

const Bound kDcqcnParams{
    "nic.cc[algorithm=dcqcn]",
    "dcqcn",
    "Congestion control: DCQCN",
    {
        Bound::custom(
            {"profile", ParamType::Choice, "\"paper\"",
             "starting values of every knob below: paper (SIGCOMM 2015 / the authors' code) or "
             "connectx (ConnectX firmware defaults); any knob can still be set",
             "docs/references.md §1.2, 1.3 (paper), 1.6 (ConnectX)", "paper|connectx"},
            [](ParamReader& r, DcqcnConfig& c) { c = profile(r.choice("profile")); }),
        knob(&DcqcnConfig::rpg_time_reset,
             {"rpg_time_reset", ParamType::Time, "paper 55us, connectx 300us",
              "T: period of the rate-increase timer; 0 turns the timer off (the byte counter "
              "alone then drives increases)",
              "DCQCN paper T = 55 us; NVIDIA rpg_time_reset"}),
        knob(&DcqcnConfig::rpg_byte_reset,
             {"rpg_byte_reset", ParamType::Bytes, "paper 10MB, connectx 32767B",
              "B: bytes sent between byte-counter rate increases; 0 turns the byte counter off "
              "(the timer alone then drives increases, hyper increase included)",
              "CoNEXT 2016 model B = 10 MB; NVIDIA rpg_byte_reset"}),
        knob(&DcqcnConfig::rpg_threshold,
             {"rpg_threshold", ParamType::Integer, "paper 5, connectx 1",
              "F: the increase event (timer or byte counter) from which additive increase "
              "replaces fast recovery; events 1 .. F-1 after a cut are fast recovery, as in the "
              "DCQCN authors' ns-3",
              "DCQCN F = 5; NVIDIA rpg_threshold", "1..1000"}),
        choice_flag(
            &DcqcnConfig::fast_recovery_f,
            {"fast_recovery_steps", ParamType::Choice, "\"F-1\"",
             "pure fast-recovery steps after a cut before additive increase: F-1 (a counter's "
             "F-th event already increases the target, the DCQCN authors' ns-3) or F (events 1 .. "
             "F halve the distance only: QCN, the DCQCN paper text, HPCC's ns-3 and the CoNEXT "
             "2016 fluid model)",
             "docs/references.md §1.2 (F-1), §1.1, 1.4 and 1.7 (F)", "F-1|F"},
            "F"),
        knob(&DcqcnConfig::rpg_ai_rate,
             {"rpg_ai_rate", ParamType::Rate, "paper 40Mbps, connectx 5Mbps",
              "R_AI: additive-increase step of the target rate", "DCQCN R_AI; NVIDIA rpg_ai_rate"}),
        knob(&DcqcnConfig::rpg_hai_rate,
             {"rpg_hai_rate", ParamType::Rate, "paper 200Mbps, connectx 50Mbps",
              "R_HAI: hyper-increase step (when every running counter passed F)",
              "authors' ns-3 sample config (paper value unverified); NVIDIA rpg_hai_rate"}),
        choice_flag(
            &DcqcnConfig::hyper_linear,
            {"hyper_increase", ParamType::Choice, "\"qcn\"",
             "qcn: a hyper increase adds R_HAI x (smallest stage - F + 1) and the counters run at "
             "T/2 and B/2 (QCN, the DCQCN authors' ns-3); linear: it adds R_HAI and T and B stay "
             "(HPCC's ns-3, where R_HAI = R_AI makes hyper increase additive)",
             "docs/references.md §1.2 (qcn), §1.7 (linear)", "qcn|linear"},
            "linear"),
        knob(&DcqcnConfig::rpg_gd,
             {"rpg_gd", ParamType::Integer, "11",
              "cut coefficient: R_C = R_C (1 - alpha / 2^(rpg_gd - 10)); 11 gives the paper's "
              "alpha/2",
              "NVIDIA rpg_gd (2.0 stored as 2^11)", "10..20"}),
        knob(&DcqcnConfig::rpg_min_dec_fac,
             {"rpg_min_dec_fac", ParamType::Integer, "paper 0, connectx 50",
              "percent of the rate one cut must keep (0: no limit)", "NVIDIA rpg_min_dec_fac",
              "0..100"}),
        knob(&DcqcnConfig::rpg_min_rate,
             {"rpg_min_rate", ParamType::Rate, "paper 100Mbps, connectx 1Mbps", "floor of the rate",
              "authors' ns-3 MinRate; NVIDIA rpg_min_rate"}),
        knob(&DcqcnConfig::rate_reduce_monitor_period,
             {"rate_reduce_monitor_period", ParamType::Time, "paper 0us, connectx 4us",
              "at most one rate cut per period; CNPs in between are applied at its end (0: every "
              "CNP cuts)",
              "NVIDIA rate_reduce_monitor_period"}),
        choice_flag(
            &DcqcnConfig::monitor_periodic,
            {"rate_reduce_monitor", ParamType::Choice, "\"after_cut\"",
             "after_cut: the monitor period runs from the last cut, a notification after it cuts "
             "at once; periodic: periods form a fixed grid from the first notification and a cut "
             "lands at the end of every period in which one arrived (HPCC's ns-3 rate-decrease "
             "check)",
             "fabtwin (after_cut); docs/references.md §1.7 (periodic)", "after_cut|periodic"},
            "periodic"),
        knob(&DcqcnConfig::dce_tcp_g,
             {"dce_tcp_g", ParamType::Integer, "paper 1020, connectx 1019",
              "alpha gain in 1/1024: g = 1 - dce_tcp_g/1024 (1020 is the paper's g = 1/256)",
              "DCQCN g = 1/256; NVIDIA dce_tcp_g", "0..1024"}),
        knob(&DcqcnConfig::dce_tcp_rtt,
             {"dce_tcp_rtt", ParamType::Time, "paper 55us, connectx 1us",
              "alpha update period (the paper's K)", "DCQCN K = 55 us; NVIDIA dce_tcp_rtt"}),
        choice_flag(
            &DcqcnConfig::alpha_periodic,
            {"alpha_update", ParamType::Choice, "paper on_cnp, connectx periodic",
             "on_cnp: alpha rises at each CNP and decays after each period without one (paper); "
             "periodic: every period alpha rises if a CNP came in it, else decays (firmware)",
             "docs/references.md §1.1 and 1.6", "on_cnp|periodic"},
            "periodic"),
        knob(&DcqcnConfig::initial_alpha_value,
             {"initial_alpha_value", ParamType::Integer, "paper 1024, connectx 1023",
              "alpha before the first CNP, in 1/1024", "NVIDIA initial_alpha_value", "0..1024"}),
        knob(&DcqcnConfig::clamp_tgt_rate,
             {"clamp_tgt_rate", ParamType::Boolean, "paper true, connectx false",
              "every cut sets the target rate to the current rate (R_T = R_C)",
              "DCQCN paper; NVIDIA clamp_tgt_rate"}),
        knob(&DcqcnConfig::clamp_tgt_rate_after_time_inc,
             {"clamp_tgt_rate_after_time_inc", ParamType::Boolean, "paper false, connectx true",
              "a cut sets R_T = R_C if any increase event happened since the last cut",
              "NVIDIA clamp_tgt_rate_after_time_inc"}),
        knob(&DcqcnConfig::rate_to_set_on_first_cnp,
             {"rate_to_set_on_first_cnp", ParamType::Rate, "0 (off)",
              "the first CNP sets the rate (and target) to this instead of cutting",
              "NVIDIA rate_to_set_on_first_cnp (sources disagree on its default)"}),
        choice_flag(
            &DcqcnConfig::ack_echo,
            {"notification", ParamType::Choice, "\"cnp\"",
             "how congestion reaches the sender: cnp (the receiver's notification point sends "
             "CNP frames, RoCEv2 and ConnectX) or ack_echo (no CNP frames; every ACK answering "
             "CE-marked data carries the ECN echo and each echo counts as a CNP, as in HPCC's "
             "ns-3; combine with rate_reduce_monitor for its once-per-period cut)",
             "RoCEv2 Annex A17 (cnp); docs/references.md §1.7 (ack_echo)", "cnp|ack_echo"},
            "ack_echo"),
        knob(&DcqcnConfig::min_time_between_cnps,
             {"min_time_between_cnps", ParamType::Time, "paper 50us, connectx 4us",
              "notification point: at most one CNP per queue pair per interval",
              "DCQCN N = 50 us; NVIDIA min_time_between_cnps (firmware default unverified)"}),
        knob(&DcqcnConfig::cnp_dscp,
             {"cnp_dscp", ParamType::Integer, "48",
              "DSCP of CNPs; the fabric's QoS map (fabric.qos.dscp_to_priority) gives the priority "
              "they travel in at the NIC and every switch: 48 maps to priority 6, strict by "
              "default; the data's DSCP puts them in the data class",
              "NVIDIA cnp_dscp / cnp_802p_prio 6 as commonly configured", "0..63"}),
        Bound::field(
            &DcqcnConfig::cnp_delay,
            {"cnp_delay", ParamType::Time, "\"0us\"",
             "notification point: CNP generation latency, from the arrival of the CE-marked "
             "packet that calls for a CNP to the CNP joining the receiving NIC's port (the rate "
             "limit min_time_between_cnps is judged at the arrival); the same in both profiles",
             "fabtwin: 0, the CNP leaves as the mark arrives (DCQCN's NP answers at once); the "
             "DCQCN authors report ConnectX-3 Pro generating one CNP every 1-5 us "
             "(docs/references.md §1.1, §11.2)"}),
    },
    check};

}  // namespace

const BoundParams<DcqcnConfig>& dcqcn_params() {
  return kDcqcnParams;
}

DcqcnReactionPoint::DcqcnReactionPoint(const DcqcnConfig& config, BitsPerSec line_rate)
    : c_(config),
      line_(static_cast<double>(line_rate.bps)),
      rate_(line_),
      target_(line_),
      alpha_(config.initial_alpha_value / 1024.0) {}

double DcqcnReactionPoint::alpha_at(Time now) const {
  if (cnps_ == 0) return alpha_;
  const int64_t periods = (now - alpha_time_).ps / c_.dce_tcp_rtt.ps;
  if (periods <= 0) return alpha_;
  const double keep = 1.0 - c_.g();
  if (!c_.alpha_periodic) return alpha_ * std::pow(keep, static_cast<double>(periods));
  // Periodic: the first period ends with a rise if a CNP came in it; the rest decay.
  const double first = cnp_in_period_ ? keep * alpha_ + c_.g() : keep * alpha_;
  return first * std::pow(keep, static_cast<double>(periods - 1));
}

void DcqcnReactionPoint::settle_alpha(Time now) {
  const int64_t periods = (now - alpha_time_).ps / c_.dce_tcp_rtt.ps;
  alpha_ = alpha_at(now);
  if (periods > 0) {
    alpha_time_ += c_.dce_tcp_rtt * periods;
    cnp_in_period_ = false;
  }
}

void DcqcnReactionPoint::on_ack(const AckRecord& ack) {
  if (c_.ack_echo && ack.ece) on_cnp(ack.now);  // the echo stands for a CNP
}

void DcqcnReactionPoint::on_cnp(Time now) {
  const bool first = cnps_ == 0;
  ++cnps_;
  if (first) {
    alpha_time_ = now;
    first_cnp_ = now;
  } else {
    settle_alpha(now);
  }
  if (c_.alpha_periodic) {
    cnp_in_period_ = true;
  } else {
    alpha_ = (1.0 - c_.g()) * alpha_ + c_.g();  // alpha rises first, then the rate is cut
    alpha_time_ = now;                          // decay restarts from this CNP
  }
  if (first && c_.rate_to_set_on_first_cnp.bps > 0) {
    rate_ = target_ = std::min(line_, static_cast<double>(c_.rate_to_set_on_first_cnp.bps));
    byte_stage_ = time_stage_ = 0;
    bytes_left_ = c_.rpg_byte_reset;
    next_increase_ = c_.rpg_time_reset.ps > 0 ? now + c_.rpg_time_reset : Time::max();
    last_cut_ = now;
    active_ = true;
    ++cuts_;  // the rate was set down: a cut, and the monitor period starts here
    return;
  }
  const Time period = c_.rate_reduce_monitor_period;
  if (c_.monitor_periodic) {
    // The cut lands at the end of the grid period this notification arrived in.
    if (!cut_pending_) cut_due_ = first_cnp_ + period * ((now - first_cnp_).ps / period.ps + 1);
    cut_pending_ = true;
  } else if (period.ps == 0 || cuts_ == 0 || now - last_cut_ >= period) {
    cut(now);
  } else {
    cut_pending_ = true;
    cut_due_ = last_cut_ + period;
  }
}

void DcqcnReactionPoint::cut(Time now) {
  // Target-rate clamping as in the DCQCN authors' ns-3 reaction point.
  if (c_.clamp_tgt_rate) {
    target_ = rate_;
  } else if (c_.clamp_tgt_rate_after_time_inc) {
    if (byte_stage_ != 0 || time_stage_ != 0) target_ = rate_;
  } else if (byte_stage_ != 0) {
    target_ = rate_;
  }
  const double divisor = std::ldexp(1.0, c_.rpg_gd - 10);
  const double factor = std::max(1.0 - alpha_at(now) / divisor, c_.rpg_min_dec_fac / 100.0);
  rate_ = std::max(static_cast<double>(c_.rpg_min_rate.bps), rate_ * factor);
  byte_stage_ = time_stage_ = 0;
  bytes_left_ = c_.rpg_byte_reset;
  next_increase_ = c_.rpg_time_reset.ps > 0 ? now + c_.rpg_time_reset : Time::max();
  last_cut_ = now;
  cut_pending_ = false;
  active_ = true;
  ++cuts_;
}

// A counter that is off does not take part: with one counter running, that one alone decides
// between fast recovery and hyper increase.
bool DcqcnReactionPoint::hyper() const {
  const int f = c_.fast_recovery_events() + 1;
  return (c_.rpg_time_reset.ps == 0 || time_stage_ >= f) &&
         (c_.rpg_byte_reset == 0 || byte_stage_ >= f);
}

void DcqcnReactionPoint::increase(bool by_timer, Time now) {
  const int f = c_.fast_recovery_events() + 1;  // the stage at which a counter leaves FR
  const bool timer_past = c_.rpg_time_reset.ps > 0 && time_stage_ >= f;
  const bool bytes_past = c_.rpg_byte_reset > 0 && byte_stage_ >= f;
  const bool hyper_now = hyper();
  if (hyper_now) {
    int stage = c_.rpg_time_reset.ps > 0 ? time_stage_ : byte_stage_;
    if (c_.rpg_time_reset.ps > 0 && c_.rpg_byte_reset > 0)
      stage = std::min(byte_stage_, time_stage_);
    const double steps = c_.hyper_linear ? 1.0 : stage - f + 1;
    target_ += static_cast<double>(c_.rpg_hai_rate.bps) * steps;
  } else if (timer_past || bytes_past) {  // additive increase
    target_ += static_cast<double>(c_.rpg_ai_rate.bps);
  }  // else fast recovery: halve the distance to the target
  target_ = std::min(target_, line_);
  rate_ = std::min(line_, (rate_ + target_) / 2);
  if (rate_ >= line_ * (1 - 1e-9)) {  // recovered: nothing left to do until the next CNP
    rate_ = target_ = line_;
    active_ = false;
    next_increase_ = Time::max();
  } else if (by_timer) {
    const bool halve = hyper_now && !c_.hyper_linear;
    next_increase_ = now + (halve ? Time{c_.rpg_time_reset.ps / 2} : c_.rpg_time_reset);
  }
}

void DcqcnReactionPoint::on_packet_sent(int64_t bytes, Time now) {
  if (!active_ || c_.rpg_byte_reset == 0) return;
  bytes_left_ -= bytes;
  if (bytes_left_ > 0) return;
  ++byte_stage_;
  bytes_left_ = hyper() && !c_.hyper_linear ? c_.rpg_byte_reset / 2 : c_.rpg_byte_reset;
  increase(false, now);
}

Time DcqcnReactionPoint::next_timer() const {
  Time t = active_ ? next_increase_ : Time::max();
  if (cut_pending_) t = std::min(t, cut_due_);
  return t;
}

void DcqcnReactionPoint::on_timer(Time now) {
  if (cut_pending_ && now >= cut_due_) cut(now);
  if (active_ && now >= next_increase_) {
    ++time_stage_;
    increase(true, now);
  }
}

CcState DcqcnReactionPoint::state(Time now) const {
  return {{static_cast<int64_t>(rate_)}, {static_cast<int64_t>(target_)}, alpha_at(now), cuts_};
}

}  // namespace fabtwin
