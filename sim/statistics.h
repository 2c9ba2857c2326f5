// Small summary statistics over result vectors: percentiles and Jain's fairness index.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace fabtwin {

// Nearest-rank percentile (q in 0..100) of `values`; 0 for an empty vector.
inline double percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(q / 100.0 * static_cast<double>(values.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
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

}  // namespace fabtwin
