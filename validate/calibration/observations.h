// What a calibration fits to: every metric of every measured row, in a family (busbw, time,
// latency, bandwidth, fct, counters), with what a slice can select it by (its size, its
// collective or test, its case: which measurement and scenario it came from), and its residual
// against a simulated value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "sim/cli/result_tables.h"

namespace fabtwin::calibration {

// A metric family: the tables and metric columns it takes, and its default weight.
struct Family {
  const char* name;
  const char* table;
  std::vector<const char*> metrics;
  double default_weight;
  const char* meaning;
};
const std::vector<Family>& families();
// The keyed table specification of `table` for calibration (every family's metrics on it).
TableSpec calibration_table(const std::string& table);

// One measurement and the scenario that describes the measured run.
struct Case {
  std::string label;  // "1" or what --case named it
  std::string measured_file;
  std::string measured_sha256;
  std::string measured_source;  // the file's `source` attribute (hardware, simulation, ...)
  std::string scenario_file;
  std::string cc;  // nic.cc.algorithm of the scenario
  int nodes = 0;   // GPU nodes of its collectives, else hosts
  int ranks = 0;   // ranks of its collectives, else 0
};

struct Observation {
  size_t case_index = 0;
  std::string table, key, metric, family;
  double measured = 0;
  double size = 0;  // bytes: the row's message or collective size
  std::string op;   // the collective (all_reduce), the perftest test, or "flow"
};

// Every metric of every row of `c`'s measured file that a family takes and that has a value
// (a value the log did not have, -1, or a non-positive time or bandwidth, is left out).
std::vector<Observation> read_observations(const ResultFile& measured, size_t case_index);

// A result file's values by (table, key, metric), for the tables the families take.
using RowValues = std::map<std::string, double>;
std::string value_key(const std::string& table, const std::string& key, const std::string& metric);
RowValues read_values(const ResultFile& file);

// ln(model / measured) (counters: ln((model + 1) / (measured + 1)), so that a zero is fitted);
// a model value of 0 or less (a flow that did not complete) counts as a thousandth of the
// measured value.
double residual(const Observation& o, double model);
// (model - measured) / measured, what the report prints.
double relative_error(const Observation& o, double model);

}  // namespace fabtwin::calibration
