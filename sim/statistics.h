// Small summary statistics over result vectors: percentiles, Jain's fairness index, and the
// mean with its 95% confidence interval (Student's t).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace fabtwin {

// Nearest-rank percentile (q in 0..100) of `sorted`, which is in ascending order; 0 for an
// empty vector. For several percentiles of one vector: sort it once, then call this.
inline double sorted_percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const double rank = std::ceil(q / 100.0 * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

// Nearest-rank percentile (q in 0..100) of `values`, in any order; 0 for an empty vector.
inline double percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return sorted_percentile(values, q);
}

// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all shares are equal, 1/n at worst.
inline double jain_index(const std::vector<double>& x) {
  double sum = 0, squares = 0;
  for (double v : x) {
    sum += v;
    squares += v * v;
  }
  return squares > 0 ? sum * sum / (static_cast<double>(x.size()) * squares) : 0.0;
}

// t_{0.975, df}: the two-sided 95% critical value of Student's t with `df` >= 1 degrees of
// freedom. df 1..30 from the NIST/SEMATECH table (4 decimals); above, the Cornish-Fisher
// expansion of Abramowitz & Stegun 26.7.5 about the normal quantile (error below 1e-5 there).
inline double student_t_975(int df) {
  static constexpr double kTable[30] = {
      12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
      2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
      2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};
  if (df < 1) return std::nan("");
  if (df <= 30) return kTable[df - 1];
  const double x = 1.959963984540054, v = df;  // the normal distribution's 0.975 quantile
  const double x3 = x * x * x, x5 = x3 * x * x, x7 = x5 * x * x, x9 = x7 * x * x;
  const double g1 = (x3 + x) / 4;
  const double g2 = (5 * x5 + 16 * x3 + 3 * x) / 96;
  const double g3 = (3 * x7 + 19 * x5 + 17 * x3 - 15 * x) / 384;
  const double g4 = (79 * x9 + 776 * x7 + 1482 * x5 - 1920 * x3 - 945 * x) / 92160;
  return x + g1 / v + g2 / (v * v) + g3 / (v * v * v) + g4 / (v * v * v * v);
}

// The mean of `x` and the half-width of its 95% confidence interval,
// t_{0.975, n-1} * s / sqrt(n) with s the sample standard deviation (NaN for fewer than 2
// values; the mean is NaN for none).
struct MeanCi {
  double mean;
  double ci95;
};
inline MeanCi mean_ci95(const std::vector<double>& x) {
  const double nan = std::nan("");
  if (x.empty()) return {nan, nan};
  double sum = 0;
  for (double v : x) sum += v;
  const double n = static_cast<double>(x.size()), mean = sum / n;
  if (x.size() < 2) return {mean, nan};
  double squares = 0;
  for (double v : x) squares += (v - mean) * (v - mean);
  const double s = std::sqrt(squares / (n - 1));
  return {mean, student_t_975(static_cast<int>(x.size()) - 1) * s / std::sqrt(n)};
}

}  // namespace fabtwin
