// What a calibration reports: each parameter (range, start, fitted value, standard error, or
// why the measurements cannot identify it), each measured metric against the model before and
// after the fit, and the mean errors per slice (the fitted slice is in-sample; only the held-out
// slice is validation), beside the closed-form alpha-beta model's. Written as text, JSON and
// HDF5 (/calibration/...), with the same records.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/record_field.h"

namespace fabtwin::calibration {

struct ParameterRecord {
  std::string path;
  std::string status;  // fitted | at_bound | no_effect | not_separately_identifiable
  std::string unit;    // ps, bps, B or empty
  double lo = 0, hi = 0, initial = 0, fitted = 0;
  double standard_error = 0;  // in the unit; 0 where not fitted
  double effect = 0;          // largest residual change over the range
  std::string reason;         // why it was not fitted
};

constexpr auto record_fields(std::type_identity<ParameterRecord>) {
  return std::tuple{
      text("path", &ParameterRecord::path, 64, "Scenario path of the parameter."),
      text("status", &ParameterRecord::status, 32,
           "`fitted`, `at_bound` (fitted to an end of its range: widen it), `no_effect` (the "
           "measurements do not depend on it) or `not_separately_identifiable` (it moves the "
           "metrics as another fitted parameter does)."),
      text("unit", &ParameterRecord::unit, 8,
           "Unit of the values: `ps`, `bps`, `B`, or empty for a number."),
      field("lo", &ParameterRecord::lo, "unit", "Lower end of the range searched."),
      field("hi", &ParameterRecord::hi, "unit", "Upper end of the range searched."),
      field("initial", &ParameterRecord::initial, "unit",
            "The scenario's value (or the declared default): where the fit started."),
      field("fitted", &ParameterRecord::fitted, "unit",
            "The calibrated value (the initial one where not fitted)."),
      field("standard_error", &ParameterRecord::standard_error, "unit",
            "Standard error of the fitted value from the Jacobian at the fit (0 where not "
            "fitted; infinite where the fitted rows have no slope in it there)."),
      field("effect", &ParameterRecord::effect, "",
            "Largest change of a fitted residual, ln(model/measured), between the ends of the "
            "range, the other parameters at their start."),
      text("reason", &ParameterRecord::reason, 160,
           "Why it was not fitted, or why a fitted value is uncertain (at a bound, weakly "
           "identified)."),
  };
}

struct RowRecord {
  std::string case_label, table, key, metric, family, role, op, cc;
  int64_t nodes = 0;
  double size = 0;
  double measured = 0, before = 0, after = 0;
  double error_before = 0, error_after = 0;  // (model - measured) / measured
  double alpha_beta = 0;                     // the alpha-beta model's value; NaN where none
};

constexpr auto record_fields(std::type_identity<RowRecord>) {
  return std::tuple{
      text("case", &RowRecord::case_label, 32,
           "Case: which measurement (and scenario) the row is of."),
      text("table", &RowRecord::table, 32,
           "Table of the measured row (`collectives/results`, ...)."),
      text("key", &RowRecord::key, 64,
           "Key of the row in its table, as `fabtwin compare` prints it."),
      text("metric", &RowRecord::metric, 32, "Metric column."),
      text("family", &RowRecord::family, 16, "Metric family (its weight in the objective)."),
      text("role", &RowRecord::role, 16,
           "`fit` (in the slice fitted on: in-sample) or `held_out` (predicted: validation)."),
      text("op", &RowRecord::op, 16, "The collective, the perftest test, or `flow`."),
      text("cc", &RowRecord::cc, 16, "Congestion control of the case's scenario."),
      field("nodes", &RowRecord::nodes, "", "GPU nodes (hosts without collectives) of the case."),
      field("size", &RowRecord::size, "B", "Message or collective size of the row."),
      field("measured", &RowRecord::measured, "", "Measured value, in the table's unit."),
      field("before", &RowRecord::before, "", "Simulated with the starting values."),
      field("after", &RowRecord::after, "", "Simulated with the calibrated values."),
      field("error_before", &RowRecord::error_before, "", "`(before - measured) / measured`."),
      field("error_after", &RowRecord::error_after, "", "`(after - measured) / measured`."),
      field("alpha_beta", &RowRecord::alpha_beta, "",
            "The closed-form alpha-beta model fitted on the same slice (times only; NaN "
            "elsewhere)."),
  };
}

struct SliceRecord {
  std::string role, by, value, family;
  int64_t rows = 0;
  double error_before = 0, error_after = 0, max_after = 0;  // mean and max absolute relative error
  double alpha_beta = 0;  // mean absolute relative error of the alpha-beta model (NaN: none)
};

constexpr auto record_fields(std::type_identity<SliceRecord>) {
  return std::tuple{
      text("role", &SliceRecord::role, 16, "`fit` (in-sample) or `held_out` (validation)."),
      text("by", &SliceRecord::by, 16,
           "What the rows are grouped by: `all`, `metric`, `case`, `op`, `size` (a band), `cc`, "
           "`nodes`."),
      text("value", &SliceRecord::value, 32, "The group's value (a size band: `<=64KiB`, ...)."),
      text("family", &SliceRecord::family, 16, "Metric family."),
      field("rows", &SliceRecord::rows, "",
            "Metrics in the group (a measured 0, which has no relative error, is not counted)."),
      field("error_before", &SliceRecord::error_before, "",
            "Mean absolute relative error with the starting values."),
      field("error_after", &SliceRecord::error_after, "",
            "Mean absolute relative error with the calibrated values."),
      field("max_after", &SliceRecord::max_after, "",
            "Largest absolute relative error with the calibrated values."),
      field("alpha_beta", &SliceRecord::alpha_beta, "",
            "Mean absolute relative error of the alpha-beta model fitted on the same slice (NaN "
            "where it "
            "does not apply)."),
  };
}

struct Report {
  nlohmann::json provenance;  // measured files and hashes, scenarios, slices, method, date
  std::vector<ParameterRecord> parameters;
  std::vector<RowRecord> rows;
  std::vector<SliceRecord> slices;
  nlohmann::json fit;                 // objective before and after, evaluations, method, notes
  std::vector<std::string> warnings;  // measured rows not simulated, ...
};

// The per-slice means of `rows`, for each role and family: over all, and by metric, case, op,
// size band, cc and nodes.
std::vector<SliceRecord> slice_errors(const std::vector<RowRecord>& rows);

void print_report(const Report& r, std::ostream& out);
nlohmann::json report_json(const Report& r);
void write_report_hdf5(const Report& r, const std::string& file);

// Calls f(name, rows) for each table of the HDF5 report (for the schema document).
template <class F>
void for_each_calibration_table(const Report& r, F&& f) {
  f("calibration/parameters", r.parameters);
  f("calibration/rows", r.rows);
  f("calibration/slices", r.slices);
}

}  // namespace fabtwin::calibration
