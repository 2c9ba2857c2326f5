#include "models/cc/dcqcn_fluid_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace fabtwin {

namespace {

using Real = long double;

constexpr Real kNegInf = -std::numeric_limits<Real>::infinity();

// The model in packets and packets/s, which is what its probabilities are per.
struct PacketUnits {
  Real capacity;  // C
  Real rate;      // R_C* = C/N
  Real rate_ai;   // R_AI
  Real tau, tau_prime, timer;
  Real byte_counter;  // B
  Real fast_recovery;
};

PacketUnits to_packets(const DcqcnFluidParams& prm) {
  const Real bits_per_packet = 8.0L * prm.packet_bytes;
  PacketUnits u;
  u.capacity = prm.capacity_bps / bits_per_packet;
  u.rate = u.capacity / prm.flows;
  u.rate_ai = prm.rate_ai_bps / bits_per_packet;
  u.tau = prm.tau_s;
  u.tau_prime = prm.tau_prime_s;
  u.timer = prm.timer_s;
  u.byte_counter = prm.byte_counter_bytes / prm.packet_bytes;
  u.fast_recovery = prm.fast_recovery;
  return u;
}

void validate(const DcqcnFluidParams& prm) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("dcqcn_fixed_point: ") + what);
  };
  require(std::isfinite(prm.capacity_bps) && prm.capacity_bps > 0, "capacity_bps must be > 0");
  require(prm.flows >= 1, "flows must be >= 1");
  require(std::isfinite(prm.packet_bytes) && prm.packet_bytes > 0, "packet_bytes must be > 0");
  require(prm.kmin_bytes >= 0 && prm.kmax_bytes > prm.kmin_bytes,
          "need 0 <= kmin_bytes < kmax_bytes");
  require(prm.pmax > 0 && prm.pmax <= 1, "pmax must be in (0, 1]");
  require(std::isfinite(prm.tau_s) && prm.tau_s > 0, "tau_s must be > 0");
  require(std::isfinite(prm.tau_prime_s) && prm.tau_prime_s > 0, "tau_prime_s must be > 0");
  require(std::isfinite(prm.timer_s) && prm.timer_s > 0, "timer_s must be > 0");
  require(std::isfinite(prm.byte_counter_bytes) && prm.byte_counter_bytes > 0,
          "byte_counter_bytes must be > 0");
  require(prm.fast_recovery >= 0, "fast_recovery must be >= 0");
  require(std::isfinite(prm.rate_ai_bps) && prm.rate_ai_bps > 0, "rate_ai_bps must be > 0");
}

// log(e^x - 1) for x > 0 without overflow: a byte counter of 10^4 packets at p = 0.1 puts
// (1-p)^-B near e^1000, beyond even long double.
Real log_expm1(Real x) {
  if (x > 40) return x + std::log1p(-std::exp(-x));
  return std::log(std::expm1(x));
}

// log(e^x + e^y), tolerating -inf for a term that has underflowed.
Real log_add(Real x, Real y) {
  if (x < y) std::swap(x, y);
  if (y == kNegInf) return x;
  return x + std::log1p(std::exp(y - x));
}

// The fixed-point terms for one p, all as logarithms: b..e span hundreds of orders of magnitude
// between p = 1e-9 and p = pmax, and (1-p)^x is formed as exp(x log1p(-p)) so that a tiny p
// keeps its precision instead of vanishing into 1 - p.
struct LogTerms {
  Real log_a, log_alpha, log_bd, log_ce;
};

LogTerms log_terms(const PacketUnits& u, Real p) {
  const Real l = std::log1p(-p);  // log(1-p) < 0
  LogTerms t;
  // 1 - (1-p)^x = -expm1(x l): at least one mark among x packets.
  t.log_a = std::log(-std::expm1(u.tau * u.rate * l));
  t.log_alpha = std::log(-std::expm1(u.tau_prime * u.rate * l));
  const Real log_p = std::log(p);
  const Real tr = u.timer * u.rate;  // packets sent per timer period
  const Real log_b = log_p - log_expm1(-u.byte_counter * l);
  const Real log_d = log_p - log_expm1(-tr * l);
  // (1-p)^(F x) with F = 0 is 1 even at p = 1, where F x log(1-p) would be 0 * -inf.
  const Real log_c = (u.fast_recovery > 0 ? u.fast_recovery * u.byte_counter * l : 0) + log_b;
  const Real log_e = (u.fast_recovery > 0 ? u.fast_recovery * tr * l : 0) + log_d;
  t.log_bd = log_add(log_b, log_d);
  t.log_ce = log_add(log_c, log_e);
  return t;
}

// log(LHS / RHS) of the fixed-point equation; increasing in p, negative below p*.
Real log_residual(const PacketUnits& u, Real p) {
  const LogTerms t = log_terms(u, p);
  const Real log_rhs = 2 * std::log(u.tau) + std::log(u.rate_ai) + std::log(u.rate);
  return 2 * t.log_a + t.log_alpha - t.log_bd - t.log_ce - log_rhs;
}

std::string describe(const DcqcnFluidParams& prm) {
  std::ostringstream os;
  os << "C=" << prm.capacity_bps / 1e9 << " Gb/s, N=" << prm.flows << ", Kmax=" << prm.kmax_bytes
     << " B, pmax=" << prm.pmax << ", R_AI=" << prm.rate_ai_bps / 1e6 << " Mb/s";
  return os.str();
}

}  // namespace

double dcqcn_taylor_p(const DcqcnFluidParams& prm) {
  validate(prm);
  const PacketUnits u = to_packets(prm);
  const Real n = prm.flows;
  const Real a = 1 / u.byte_counter + n / (u.timer * u.capacity);
  return static_cast<double>(
      std::cbrt(u.rate_ai * n * n / (u.tau_prime * u.capacity * u.capacity) * a * a));
}

DcqcnFixedPoint dcqcn_fixed_point(const DcqcnFluidParams& prm) {
  validate(prm);
  const PacketUnits u = to_packets(prm);
  const Real pmax = prm.pmax;

  // The LHS grows like p^3 from 0 (the paper shows it is monotonic), so the root lies in
  // (0, pmax] exactly when the residual is non-negative at pmax.
  Real hi = pmax;
  Real f_hi = log_residual(u, hi);
  if (std::isnan(f_hi)) {
    throw std::runtime_error("dcqcn_fixed_point: residual is not a number at pmax (" +
                             describe(prm) + ")");
  }
  if (f_hi < 0) {
    std::ostringstream os;
    os << "dcqcn_fixed_point: no fixed point with the queue below Kmax: the marking "
          "probability needed to hold "
       << describe(prm) << " exceeds pmax (Taylor estimate p* ~ " << dcqcn_taylor_p(prm) << ")";
    throw std::runtime_error(os.str());
  }

  // Walk down in factors of 4 to bracket the sign change.
  Real lo = hi;
  Real f_lo = f_hi;
  while (f_lo >= 0) {
    hi = lo;
    lo = hi / 4;
    if (lo < 1e-300L) {
      throw std::runtime_error("dcqcn_fixed_point: no root of the fixed-point equation in (0, " +
                               std::to_string(prm.pmax) + "] (" + describe(prm) + ")");
    }
    f_lo = log_residual(u, lo);
    if (std::isnan(f_lo)) {
      throw std::runtime_error("dcqcn_fixed_point: residual is not a number while bracketing (" +
                               describe(prm) + ")");
    }
  }

  // Bisection in log p: the bracket spans a factor of 4, so ~60 halvings reach the precision
  // of long double's logarithm. Robust matters more than fast here.
  Real x_lo = std::log(lo), x_hi = std::log(hi);
  for (int i = 0; i < 200 && x_hi - x_lo > 1e-16L * std::fabs(x_lo) + 1e-18L; ++i) {
    const Real x_mid = (x_lo + x_hi) / 2;
    const Real f_mid = log_residual(u, std::exp(x_mid));
    if (f_mid == 0) {
      x_lo = x_hi = x_mid;
      break;
    }
    (f_mid < 0 ? x_lo : x_hi) = x_mid;
  }
  const Real p = std::exp((x_lo + x_hi) / 2);

  const LogTerms t = log_terms(u, p);
  const Real a = std::exp(t.log_a);
  const Real ce = std::exp(t.log_ce);
  const Real bits_per_packet = 8.0L * prm.packet_bytes;

  DcqcnFixedPoint fp;
  fp.p = static_cast<double>(p);
  fp.queue_bytes =
      static_cast<double>(prm.kmin_bytes + p / pmax * (Real(prm.kmax_bytes) - prm.kmin_bytes));
  fp.alpha = static_cast<double>(std::exp(t.log_alpha));
  fp.rate_bps = static_cast<double>(u.rate * bits_per_packet);
  fp.target_rate_bps =
      static_cast<double>(u.rate * (1 + ce * u.tau * u.rate_ai / a) * bits_per_packet);
  fp.p_taylor = dcqcn_taylor_p(prm);
  return fp;
}

namespace {

// What the right-hand side needs from the past: one flow's feedback at one time, from the
// marking probability then and the flow's rate then (packets/s). The equations are linear in
// these, so interpolating them in time is interpolating the delayed terms.
struct Feedback {
  double cut = 0;           // a = 1 - (1-p)^(tau R): a CNP within a window
  double alpha_target = 0;  // 1 - (1-p)^(tau' R): what alpha relaxes to
  double increases = 0;     // R (b + d): byte-counter and timer expiries per second
  double additive = 0;      // R_AI R ((1-p)^(FB) b + (1-p)^(FTR) d): growth of R_T
};

// The terms of the equations that depend on p alone, shared by every flow.
struct MarkingTerms {
  double p = 0;
  double log_q = 0;          // log(1 - p); -inf at p = 1
  double byte_expiry = 0;    // b, per packet sent
  double byte_additive = 0;  // (1-p)^(F B): a byte expiry past fast recovery
};

struct Constants {
  double capacity;  // packets/s
  double line;      // packets/s
  double rate_ai;   // packets/s
  double tau, tau_prime, timer, byte_counter;
  int fast_recovery;
  double g;
  double kmin, kmax, pmax;  // packets
  double packet_bytes;
};

double red(const Constants& k, double queue) {
  if (queue <= k.kmin) return 0.0;
  if (queue >= k.kmax) return 1.0;
  return k.pmax * (queue - k.kmin) / (k.kmax - k.kmin);
}

// (1-p)^x for x >= 0, with (1-p)^0 = 1 also at p = 1.
double survive(double log_q, double x) {
  return x == 0 ? 1.0 : std::exp(x * log_q);
}

MarkingTerms marking_terms(const Constants& k, double queue) {
  MarkingTerms m;
  m.p = red(k, queue);
  m.log_q = std::log1p(-m.p);
  // p / ((1-p)^-B - 1): the expected expiries per packet, 1/B without marks, 0 when all marked.
  m.byte_expiry = m.p == 0 ? 1 / k.byte_counter : m.p / std::expm1(-k.byte_counter * m.log_q);
  m.byte_additive = survive(m.log_q, k.fast_recovery * k.byte_counter);
  return m;
}

Feedback feedback(const Constants& k, const MarkingTerms& m, double rate) {
  Feedback f;
  if (rate <= 0) {
    // A flow that sends nothing gets no marks; its timer still runs (R d -> p / (T (-log(1-p)))).
    f.increases = m.p == 0 ? 1 / k.timer : (std::isinf(m.log_q) ? 0 : m.p / (k.timer * -m.log_q));
    f.additive = k.rate_ai * f.increases;
    return f;
  }
  // (1-p)^(T R) - 1 once, for the timer's expiry rate, its additive share (1-p)^(F T R) as an
  // integer power, and alpha's target when tau' = T (the paper's defaults): two exponentials
  // per flow and step instead of four.
  const double timer_packets = k.timer * rate;
  const double timer_miss = std::expm1(timer_packets * m.log_q);  // (1-p)^(T R) - 1, in [-1, 0]
  const double timer_survive = 1 + timer_miss;
  // p / ((1-p)^(-T R) - 1) = p (1-p)^(T R) / (1 - (1-p)^(T R)); 1/(T R) without marks.
  const double timer_expiry =
      timer_miss == 0 ? 1 / timer_packets : m.p * timer_survive / -timer_miss;
  double past_fast_recovery = 1;  // (1-p)^(F T R), by squaring
  double square = timer_survive;
  for (int e = k.fast_recovery; e > 0; e >>= 1, square *= square) {
    if (e & 1) past_fast_recovery *= square;
  }
  f.cut = -std::expm1(k.tau * rate * m.log_q);
  f.alpha_target = k.tau_prime == k.timer ? -timer_miss : -std::expm1(k.tau_prime * rate * m.log_q);
  f.increases = rate * (m.byte_expiry + timer_expiry);
  f.additive =
      k.rate_ai * rate * (m.byte_additive * m.byte_expiry + past_fast_recovery * timer_expiry);
  return f;
}

Feedback mix(const Feedback& newer, const Feedback& older, double w_older) {
  const double w = 1 - w_older;
  return {w * newer.cut + w_older * older.cut,
          w * newer.alpha_target + w_older * older.alpha_target,
          w * newer.increases + w_older * older.increases,
          w * newer.additive + w_older * older.additive};
}

// The state of every flow and the queue, structure of arrays.
struct State {
  std::vector<double> alpha, target, rate, sent;
  double queue = 0;
  explicit State(size_t n) : alpha(n), target(n), rate(n), sent(n) {}
};

void check_trajectory(const DcqcnTrajectoryParams& prm) {
  auto require = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("dcqcn_trajectory: ") + what);
  };
  require(!prm.flows.empty(), "needs at least one flow");
  for (const DcqcnFluidFlow& f : prm.flows) {
    require(std::isfinite(f.start_s) && f.start_s >= 0, "flow start times must be >= 0");
    require(f.packets > 0, "flow sizes must be > 0 packets");
  }
  require(std::isfinite(prm.line_rate_bps) && prm.line_rate_bps > 0, "line_rate_bps must be > 0");
  require(prm.initial_alpha >= 0 && prm.initial_alpha <= 1, "initial_alpha must be in [0, 1]");
  require(prm.model.g > 0 && prm.model.g <= 1, "g must be in (0, 1]");
  require(std::isfinite(prm.delay_s) && prm.delay_s >= 0, "delay_s must be >= 0");
  require(std::isfinite(prm.duration_s) && prm.duration_s > 0, "duration_s must be > 0");
  require(std::isfinite(prm.step_s) && prm.step_s > 0, "step_s must be > 0");
  require(std::isfinite(prm.sample_s) && prm.sample_s > 0, "sample_s must be > 0");
  require(prm.sample_s <= prm.duration_s, "sample_s must not exceed duration_s");
  require(prm.duration_s / prm.sample_s <= 1e8, "more than 10^8 samples");
  require(prm.sample_s / prm.step_s <= 1e9 && prm.delay_s / prm.step_s <= 1e8,
          "the step is too small for the sample interval or the delay");
  require((prm.duration_s / prm.sample_s + 1) * static_cast<double>(prm.flows.size()) <= 2e8,
          "samples x flows above 2 * 10^8: sample less often");
}

}  // namespace

bool DcqcnTrajectory::active(size_t sample, int flow, double sample_s) const {
  const double t = time_s(sample, sample_s);
  const size_t i = static_cast<size_t>(flow);
  return start_s[i] >= 0 && start_s[i] <= t && (finish_s[i] < 0 || t < finish_s[i]);
}

DcqcnTrajectory dcqcn_trajectory(const DcqcnTrajectoryParams& prm) {
  DcqcnFluidParams fixed = prm.model;
  fixed.flows = static_cast<int>(prm.flows.size());
  validate(fixed);
  check_trajectory(prm);
  const PacketUnits u = to_packets(fixed);
  const double bits_per_packet = 8.0 * prm.model.packet_bytes;
  const Constants k{static_cast<double>(u.capacity),
                    prm.line_rate_bps / bits_per_packet,
                    static_cast<double>(u.rate_ai),
                    prm.model.tau_s,
                    prm.model.tau_prime_s,
                    prm.model.timer_s,
                    static_cast<double>(u.byte_counter),
                    prm.model.fast_recovery,
                    prm.model.g,
                    prm.model.kmin_bytes / prm.model.packet_bytes,
                    prm.model.kmax_bytes / prm.model.packet_bytes,
                    prm.model.pmax,
                    prm.model.packet_bytes};
  const size_t flows = prm.flows.size();
  // Flows with the same start and size follow the same trajectory (same equations, same initial
  // state): each such class is integrated once and counted as many times in the queue.
  std::vector<size_t> class_of(flows);
  std::vector<DcqcnFluidFlow> classes;
  std::vector<double> members;
  {
    std::map<std::pair<double, double>, size_t> index;
    for (size_t i = 0; i < flows; ++i) {
      const DcqcnFluidFlow& f = prm.flows[i];
      const auto [it, added] = index.try_emplace({f.start_s, f.packets}, classes.size());
      if (added) {
        classes.push_back(f);
        members.push_back(0);
      }
      class_of[i] = it->second;
      members[it->second] += 1;
    }
  }
  const size_t n = classes.size();

  // A whole number of steps per sample; the delay is j steps and a fraction w of one.
  const int64_t per_sample = static_cast<int64_t>(std::ceil(prm.sample_s / prm.step_s - 1e-9));
  const double h = prm.sample_s / static_cast<double>(per_sample);
  const size_t samples = static_cast<size_t>(std::floor(prm.duration_s / prm.sample_s + 1e-9)) + 1;
  const int64_t j = static_cast<int64_t>(std::floor(prm.delay_s / h + 1e-9));
  const double w = std::max(0.0, prm.delay_s / h - static_cast<double>(j));
  const int64_t slots = j + 2;
  // The history holds every flow class's feedback over the delay: bounded, so that a long delay
  // over a fine step is refused instead of exhausting memory.
  if (static_cast<double>(slots) * static_cast<double>(n) > 2e7) {
    throw std::invalid_argument("dcqcn_trajectory: the delay spans " + std::to_string(j) +
                                " steps for each of " + std::to_string(n) +
                                " flow classes, more than 2 * 10^7 in all: take a longer step");
  }

  DcqcnTrajectory out;
  out.step_s = h;
  out.flows = static_cast<int>(flows);
  out.samples = samples;
  out.queue_bytes.resize(samples);
  out.marking_probability.resize(samples);
  out.arrival_bps.resize(samples);
  out.rate_bps.resize(samples * flows);
  out.target_bps.resize(samples * flows);
  out.alpha.resize(samples * flows);
  std::vector<double> start_s(n, -1.0), finish_s(n, -1.0);  // per class

  std::vector<Feedback> history(static_cast<size_t>(slots) * n);
  std::vector<Feedback> predicted(n);  // the feedback at t + h from the predictor (j = 0 only)
  State y(n), pred(n);
  std::vector<double> d_alpha(n), d_target(n), d_rate(n);
  std::vector<uint8_t> sending(n, 0);  // started and not finished

  auto slot = [&](int64_t step) -> Feedback* {
    return &history[static_cast<size_t>(std::max<int64_t>(step, 0) % slots) * n];
  };
  auto start_flows = [&](double t) {
    for (size_t i = 0; i < n; ++i) {
      if (start_s[i] < 0 && classes[i].start_s <= t + 1e-3 * h) {
        start_s[i] = t;
        sending[i] = 1;
        y.rate[i] = y.target[i] = k.line;
        y.alpha[i] = prm.initial_alpha;
      }
    }
  };
  auto record_feedback = [&](const State& s, Feedback* into) {
    const MarkingTerms m = marking_terms(k, s.queue);
    for (size_t i = 0; i < n; ++i) into[i] = feedback(k, m, s.rate[i]);
  };
  auto queue_growth = [&](const State& s) {
    double arrival = 0;
    for (size_t i = 0; i < n; ++i) arrival += members[i] * s.rate[i];
    const double dq = arrival - k.capacity;
    return s.queue <= 0 && dq < 0 ? 0.0 : dq;
  };
  // The derivatives of flow i at state s with delayed feedback f.
  struct Slope {
    double alpha, target, rate;
  };
  auto slope = [&](const State& s, size_t i, const Feedback& f) {
    const double gap = s.target[i] - s.rate[i];
    return Slope{k.g / k.tau_prime * (f.alpha_target - s.alpha[i]),
                 -gap * f.cut / k.tau + f.additive,
                 -s.rate[i] * s.alpha[i] * f.cut / (2 * k.tau) + gap / 2 * f.increases};
  };
  auto clamp = [&](State& s, size_t i) {
    s.rate[i] = std::clamp(s.rate[i], 0.0, k.line);
    s.target[i] = std::clamp(s.target[i], 0.0, k.line);
    s.alpha[i] = std::clamp(s.alpha[i], 0.0, 1.0);
  };
  auto record_sample = [&](size_t at) {
    double arrival = 0;
    for (size_t i = 0; i < n; ++i) arrival += members[i] * y.rate[i];
    for (size_t i = 0; i < flows; ++i) {
      const size_t cell = at * flows + i, c = class_of[i];
      out.rate_bps[cell] = y.rate[c] * bits_per_packet;
      out.target_bps[cell] = y.target[c] * bits_per_packet;
      out.alpha[cell] = y.alpha[c];
    }
    out.queue_bytes[at] = y.queue * k.packet_bytes;
    out.marking_probability[at] = red(k, y.queue);
    out.arrival_bps[at] = arrival * bits_per_packet;
  };

  start_flows(0);
  record_feedback(y, slot(0));
  record_sample(0);
  const int64_t steps = static_cast<int64_t>(samples - 1) * per_sample;
  for (int64_t step = 0; step < steps; ++step) {
    const Feedback* now_newer = slot(step - j);
    const Feedback* now_older = slot(step - j - 1);
    // Predictor (Euler).
    const double dq1 = queue_growth(y);
    pred.queue = std::max(0.0, y.queue + h * dq1);
    for (size_t i = 0; i < n; ++i) {
      if (!sending[i]) {
        pred.rate[i] = pred.target[i] = d_alpha[i] = d_target[i] = d_rate[i] = 0;
        pred.alpha[i] = y.alpha[i];
        continue;
      }
      const Slope s1 = slope(y, i, mix(now_newer[i], now_older[i], w));
      d_alpha[i] = s1.alpha;
      d_target[i] = s1.target;
      d_rate[i] = s1.rate;
      pred.alpha[i] = y.alpha[i] + h * s1.alpha;
      pred.target[i] = y.target[i] + h * s1.target;
      pred.rate[i] = y.rate[i] + h * s1.rate;
      clamp(pred, i);
    }
    // Corrector (trapezoid), the delayed feedback at t + h.
    if (j == 0) record_feedback(pred, predicted.data());
    const Feedback* next_newer = j == 0 ? predicted.data() : slot(step + 1 - j);
    const Feedback* next_older = slot(step - j);
    const double dq2 = queue_growth(pred);
    y.queue = std::max(0.0, y.queue + h / 2 * (dq1 + dq2));
    const double t_next = static_cast<double>(step + 1) * h;
    for (size_t i = 0; i < n; ++i) {
      if (!sending[i]) continue;
      const Slope s2 = slope(pred, i, mix(next_newer[i], next_older[i], w));
      const double rate_before = y.rate[i];
      y.alpha[i] += h / 2 * (d_alpha[i] + s2.alpha);
      y.target[i] += h / 2 * (d_target[i] + s2.target);
      y.rate[i] += h / 2 * (d_rate[i] + s2.rate);
      clamp(y, i);
      y.sent[i] += h / 2 * (rate_before + y.rate[i]);
      if (y.sent[i] >= classes[i].packets) {
        sending[i] = 0;
        finish_s[i] = t_next;
        y.rate[i] = y.target[i] = 0;
      }
    }
    start_flows(t_next);
    record_feedback(y, slot(step + 1));
    if ((step + 1) % per_sample == 0) record_sample(static_cast<size_t>((step + 1) / per_sample));
  }
  for (size_t i = 0; i < flows; ++i) {
    out.start_s.push_back(start_s[class_of[i]]);
    out.finish_s.push_back(finish_s[class_of[i]]);
  }
  return out;
}

DcqcnTrajectorySummary summarize(const DcqcnTrajectory& tr, const DcqcnTrajectoryParams& prm,
                                 double after_s) {
  DcqcnTrajectorySummary s;
  const size_t n = static_cast<size_t>(tr.flows);
  size_t first = static_cast<size_t>(std::ceil(std::max(0.0, after_s) / prm.sample_s - 1e-9));
  if (first >= tr.samples) first = tr.samples - 1;
  const size_t count = tr.samples - first;
  s.window_start_s = tr.time_s(first, prm.sample_s);
  s.window_end_s = tr.time_s(tr.samples - 1, prm.sample_s);
  s.mean_rate_bps.assign(n, 0);
  s.mean_target_bps.assign(n, 0);
  s.mean_alpha.assign(n, 0);
  s.min_queue_bytes = std::numeric_limits<double>::infinity();
  s.max_queue_bytes = 0;
  for (size_t at = first; at < tr.samples; ++at) {
    const double q = tr.queue_bytes[at];
    s.mean_queue_bytes += q;
    s.min_queue_bytes = std::min(s.min_queue_bytes, q);
    s.max_queue_bytes = std::max(s.max_queue_bytes, q);
    s.mean_marking_probability += tr.marking_probability[at];
    s.utilization += q > 0 ? 1.0 : std::min(1.0, tr.arrival_bps[at] / prm.model.capacity_bps);
    for (size_t i = 0; i < n; ++i) {
      s.mean_rate_bps[i] += tr.rate_bps[at * n + i];
      s.mean_target_bps[i] += tr.target_bps[at * n + i];
      s.mean_alpha[i] += tr.alpha[at * n + i];
    }
  }
  const double c = static_cast<double>(count);
  s.mean_queue_bytes /= c;
  s.mean_marking_probability /= c;
  s.utilization /= c;
  for (size_t i = 0; i < n; ++i) {
    s.mean_rate_bps[i] /= c;
    s.mean_target_bps[i] /= c;
    s.mean_alpha[i] /= c;
  }
  s.amplitude_bytes = (s.max_queue_bytes - s.min_queue_bytes) / 2;
  s.oscillating =
      s.amplitude_bytes > 0.1 * s.mean_queue_bytes && s.amplitude_bytes > prm.model.packet_bytes;
  int crossings = 0;
  double first_up = 0, last_up = 0;
  for (size_t at = first + 1; at < tr.samples; ++at) {
    if (tr.queue_bytes[at - 1] < s.mean_queue_bytes && tr.queue_bytes[at] >= s.mean_queue_bytes) {
      const double t = tr.time_s(at, prm.sample_s);
      if (crossings == 0) first_up = t;
      last_up = t;
      ++crossings;
    }
  }
  s.period_s = crossings >= 2 ? (last_up - first_up) / (crossings - 1) : 0;
  return s;
}

}  // namespace fabtwin
