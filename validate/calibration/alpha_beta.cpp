#include "validate/calibration/alpha_beta.h"

#include <cmath>
#include <limits>

namespace fabtwin::calibration {

std::optional<AlphaBeta> fit_alpha_beta(const std::vector<double>& bytes,
                                        const std::vector<double>& times) {
  // Weighted linear least squares for T = a + b S with weights 1/T^2: the normal equations.
  double s00 = 0, s01 = 0, s11 = 0, t0 = 0, t1 = 0;
  size_t n = 0;
  for (size_t i = 0; i < bytes.size() && i < times.size(); ++i) {
    if (!(times[i] > 0) || !std::isfinite(bytes[i])) continue;
    const double w = 1 / (times[i] * times[i]);
    s00 += w;
    s01 += w * bytes[i];
    s11 += w * bytes[i] * bytes[i];
    t0 += w * times[i];
    t1 += w * bytes[i] * times[i];
    ++n;
  }
  const double det = s00 * s11 - s01 * s01;
  if (n < 2 || !(std::abs(det) > 1e-12 * s00 * s11)) return std::nullopt;
  const double a = (s11 * t0 - s01 * t1) / det;
  const double b = (s00 * t1 - s01 * t0) / det;
  // Times that do not grow with the size (a message-rate bound): the latency alone, the
  // bandwidth unbounded; a = sum(w T) / sum(w) minimises the same relative errors.
  if (!(b > 0)) return AlphaBeta{t0 / s00, std::numeric_limits<double>::infinity()};
  return AlphaBeta{a, 1 / b};
}

}  // namespace fabtwin::calibration
