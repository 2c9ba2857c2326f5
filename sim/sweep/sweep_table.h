// The table of a sweep: one row per point (its axis values, the seeds run, and per metric the
// mean and the 95% confidence half-width over the seeds), written as CSV and HDF5; the ranking
// of points by one objective and the Pareto front of two.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/statistics.h"
#include "sim/sweep/sweep_file.h"

namespace fabtwin::sweep {

// A metric named as the sweep names it ("fct_p99_ps", or "fct_p99_ps_by_generator.1") read from
// a run's `metrics` object (the --json report's); nullopt when that run could not measure it.
std::optional<double> metric_value(const nlohmann::json& metrics, const std::string& name);

struct TableRow {
  size_t point = 0;
  std::vector<nlohmann::json> values;  // one per axis
  size_t seeds = 0;                    // seeds whose records were found
  std::vector<MeanCi> metrics;         // one per metric, over the seeds that measured it
};

struct Table {
  std::vector<std::string> axes;
  std::vector<bool> quantity;  // the axis's values are all quantity texts: add `<axis>_value`
  std::vector<std::string> metrics;
  std::vector<TableRow> rows;
};

// `record(point, seed)`: the stored record of that run, or null when it is not finished.
Table make_table(const SweepFile& s, const std::vector<Point>& points,
                 const std::vector<std::string>& metrics,
                 const std::function<const nlohmann::json*(size_t point, size_t seed)>& record);

std::string table_csv(const Table& t);
// Writes `t` as dataset /table of a new HDF5 file (written atomically).
void write_table_h5(const Table& t, const std::filesystem::path& file,
                    const std::string& sweep_file, const std::string& version);

// The rows' indices, best first by `o` (rows without the metric left out).
std::vector<size_t> rank_rows(const Table& t, const Objective& o);
// The rows no other row dominates under the two objectives (better or equal in both, better in
// one), ordered by the first objective; rows lacking either metric left out.
std::vector<size_t> pareto_front(const Table& t, const Objective& a, const Objective& b);
// Index into t.metrics of `name`, or throws SweepError.
size_t metric_column(const Table& t, const std::string& name);

}  // namespace fabtwin::sweep
