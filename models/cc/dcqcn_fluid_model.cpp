#include "models/cc/dcqcn_fluid_model.h"

#include <cmath>
#include <limits>
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

}  // namespace fabtwin
