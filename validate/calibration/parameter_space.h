// The parameters a calibration fits: a scenario path (`nccl.net_step_latency`), its declared
// type, the range it may take, and the map between its value and a coordinate in [0, 1] that
// the fitters work in (logarithmic for a positive range, so that 1 us and 10 us are as far
// apart as 10 us and 100 us; linear when the range starts at 0).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/params.h"

namespace fabtwin::calibration {

struct FitParameter {
  std::string path;  // scenario path, as --set writes it
  ParamType type = ParamType::Time;
  std::string unit;                 // "ps", "bps", "B" or "" (a plain number)
  double lo = 0, hi = 0;            // the range, in the unit
  double initial = 0;               // the scenario's value (or the declared default), in the unit
  bool initial_from_range = false;  // neither is a number ("auto", a profile's): mid-range
  bool logarithmic = false;
  std::string help;    // the declared meaning
  std::string source;  // where the declared default comes from

  double value(double u) const;       // the value at coordinate u (clamped to [0, 1])
  double coordinate(double v) const;  // the coordinate of value v (clamped to [0, 1])
  // v to `digits` significant digits: what a calibrated value is written and simulated with
  // (more digits than a fit resolves would only be noise in a parameter file).
  static double rounded(double v, int digits);
  // The value as a scenario file writes it ("11.2us", "190Gbps", 3), rounded to what the
  // parameter's type can hold (whole picoseconds, bits per second, bytes; integers).
  nlohmann::json scenario_value(double v) const;
  std::string text(double v) const;  // the same, as text for reports
};

// Reads `PATH[=LO:HI]` (LO and HI in the parameter's units: "2us:30us", "100Gbps:400Gbps",
// "1:8"), finds the parameter among the declared ones (`groups`), and takes its current value
// from `scenario` (or the declared default). Without a range: a quarter to four times the
// current value. Throws ScenarioError naming the argument on a parameter that is not declared,
// is not a number-like type, has a bad range, or whose current value lies outside the range.
FitParameter parse_fit_parameter(const std::string& argument, const nlohmann::json& scenario,
                                 const std::vector<const ParamGroup*>& groups);

}  // namespace fabtwin::calibration
