// The alpha-beta model, fitted in closed form: the time of an operation on S bytes is
// T(S) = alpha + S / beta (a fixed latency and a bandwidth). It is the analytic model of a
// perftest latency against message size, and of NCCL's ring: T = 2(n-1) a + 2(n-1)/n S / B
// for an all-reduce over n ranks (docs/references.md §3.1). Fitted by least squares on
// relative errors, so that 10 us and 10 ms rows weigh alike; a calibration reports it beside the
// simulator as the analytic baseline, with its error on the held-out rows.
#pragma once

#include <optional>
#include <vector>

namespace fabtwin::calibration {

struct AlphaBeta {
  double alpha = 0;  // the time at zero bytes, in the rows' time unit
  double beta = 0;   // bytes per time unit

  double time(double bytes) const { return alpha + bytes / beta; }
};

// Minimises sum(((alpha + S/beta) - T) / T)^2 over the rows (S, T); nullopt with fewer than two
// distinct sizes. Where the times do not grow with S (a message-rate bound), beta is infinite
// and alpha their relative-error mean.
std::optional<AlphaBeta> fit_alpha_beta(const std::vector<double>& bytes,
                                        const std::vector<double>& times);

}  // namespace fabtwin::calibration
