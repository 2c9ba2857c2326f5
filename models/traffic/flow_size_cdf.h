// An empirical flow-size distribution: points (size in bytes, cumulative percent), sampled by
// linear interpolation in size between points, as the published traffic generators do.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "sim/rng.h"

namespace fabtwin {

class FlowSizeCdf {
 public:
  // Reads "size percent" lines; throws std::runtime_error naming the file and line on bad input.
  static FlowSizeCdf load(const std::filesystem::path& file);
  static FlowSizeCdf from_points(std::vector<std::pair<double, double>> points);

  int64_t sample(Rng& rng) const;
  double mean() const;  // exact mean of the piecewise-linear distribution, bytes
  const std::vector<std::pair<double, double>>& points() const { return points_; }

 private:
  std::vector<std::pair<double, double>> points_;  // (bytes, percent), percent 0..100
};

// Folder of the distributions shipped with fabtwin (scenarios/flow-size-cdfs).
std::filesystem::path shipped_cdf_dir();

}  // namespace fabtwin
