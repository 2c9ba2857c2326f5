#include "models/traffic/flow_size_cdf.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "sim/file_contents.h"

namespace fabtwin {

std::filesystem::path shipped_cdf_dir() {
  return FABTWIN_CDF_DIR;
}

FlowSizeCdf FlowSizeCdf::from_points(std::vector<std::pair<double, double>> points) {
  if (points.size() < 2) throw std::runtime_error("a flow-size CDF needs at least two points");
  for (size_t i = 0; i < points.size(); ++i) {
    const auto [size, pct] = points[i];
    if (size < 0 || pct < 0 || pct > 100 || !std::isfinite(size)) {
      throw std::runtime_error("point " + std::to_string(i + 1) +
                               ": expected size >= 0 and percent in 0..100");
    }
    if (i > 0 && (size < points[i - 1].first || pct < points[i - 1].second)) {
      throw std::runtime_error("point " + std::to_string(i + 1) +
                               ": sizes and percents must not decrease");
    }
  }
  if (points.back().second != 100) {
    throw std::runtime_error("the last point must reach 100 percent, found " +
                             std::to_string(points.back().second));
  }
  // Load is turned into an arrival rate by dividing by the mean size: a mean of 0 would make
  // arrivals infinitely frequent.
  if (points.back().first <= 0) {
    throw std::runtime_error("expected some size above 0 bytes, found every size 0");
  }
  FlowSizeCdf cdf;
  cdf.points_ = std::move(points);
  return cdf;
}

FlowSizeCdf FlowSizeCdf::load(const std::filesystem::path& file) {
  std::istringstream in(file_contents(file, "flow-size CDF file"));
  std::vector<std::pair<double, double>> points;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[0] == '#') continue;
    std::istringstream fields(line);
    double size = 0, pct = 0;
    std::string rest;
    if (!(fields >> size >> pct) || (fields >> rest)) {
      throw std::runtime_error(file.string() + ":" + std::to_string(number) +
                               ": expected \"size_bytes cumulative_percent\", found \"" + line +
                               "\"");
    }
    points.emplace_back(size, pct);
  }
  try {
    return from_points(std::move(points));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

int64_t FlowSizeCdf::sample(Rng& rng) const {
  const double u = rng.uniform() * 100.0;
  // Mass at or below the first point sits on its size.
  if (u < points_.front().second) return std::max<int64_t>(1, std::llround(points_.front().first));
  for (size_t i = 1; i < points_.size(); ++i) {
    const auto [s1, p1] = points_[i];
    if (u < p1) {
      const auto [s0, p0] = points_[i - 1];
      const double size = p1 > p0 ? s0 + (s1 - s0) * (u - p0) / (p1 - p0) : s1;
      return std::max<int64_t>(1, std::llround(size));
    }
  }
  return std::max<int64_t>(1, std::llround(points_.back().first));
}

double FlowSizeCdf::mean() const {
  double m = points_.front().second / 100.0 * points_.front().first;
  for (size_t i = 1; i < points_.size(); ++i) {
    const auto [s0, p0] = points_[i - 1];
    const auto [s1, p1] = points_[i];
    m += (p1 - p0) / 100.0 * (s0 + s1) / 2.0;
  }
  return m;
}

}  // namespace fabtwin
