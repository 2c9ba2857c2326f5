#include "models/fabric/max_min_fair.h"

#include <algorithm>
#include <limits>

namespace fabtwin {

std::vector<double> max_min_rates(const std::vector<FlowPath>& paths,
                                  const std::vector<double>& capacity) {
  const size_t n = paths.size();
  std::vector<double> rate(n, 0.0);
  std::vector<double> left = capacity;
  std::vector<double> crossing(capacity.size(), 0.0);  // weight of the flows still growing
  std::vector<char> growing(n, 0);
  size_t active = 0;
  for (size_t i = 0; i < n; ++i) {
    if (paths[i].empty()) continue;
    growing[i] = 1;
    ++active;
    for (const auto& [l, w] : paths[i]) crossing[l] += w;
  }
  while (active > 0) {
    // The largest equal increase every growing flow can take: the tightest link's share.
    double step = std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < left.size(); ++l) {
      if (crossing[l] > 1e-12) step = std::min(step, std::max(0.0, left[l]) / crossing[l]);
    }
    for (size_t l = 0; l < left.size(); ++l) left[l] -= step * crossing[l];
    for (size_t i = 0; i < n; ++i) {
      if (growing[i]) rate[i] += step;
    }
    // Flows crossing a link now full stop growing.
    for (size_t i = 0; i < n; ++i) {
      if (!growing[i]) continue;
      bool held = false;
      for (const auto& [l, w] : paths[i]) held |= left[l] <= 1e-9 * capacity[l];
      if (!held) continue;
      growing[i] = 0;
      --active;
      for (const auto& [l, w] : paths[i]) crossing[l] -= w;
    }
  }
  return rate;
}

std::vector<double> fluid_completion_times(const std::vector<FlowPath>& paths,
                                           const std::vector<double>& bits,
                                           const std::vector<double>& capacity) {
  const size_t n = paths.size();
  std::vector<double> left = bits, done(n, std::numeric_limits<double>::infinity());
  std::vector<FlowPath> running = paths;
  double now = 0;
  for (;;) {
    const std::vector<double> rate = max_min_rates(running, capacity);
    double step = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i) {
      if (!running[i].empty() && rate[i] > 0) step = std::min(step, left[i] / rate[i]);
    }
    if (step == std::numeric_limits<double>::infinity()) break;
    now += step;
    for (size_t i = 0; i < n; ++i) {
      if (running[i].empty()) continue;
      left[i] -= rate[i] * step;
      if (left[i] <= 1e-9 * bits[i]) {
        done[i] = now;
        running[i].clear();
      }
    }
  }
  return done;
}

}  // namespace fabtwin
