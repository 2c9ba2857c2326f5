// `fabtwin compare SIM.h5 HW.h5`: a simulated run against a measured one (or any two result
// files of the schema), metric by metric. Rows are matched by their key (a flow's id, hosts and
// size; a collective's op, type and size; a perftest tool and message size); the error of each
// metric is given for every matched row, and rows only one file has are listed.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabtwin {

// One metric of one matched row.
struct MetricError {
  std::string metric;
  double a = 0, b = 0;  // the first (SIM) and the second (HW) file's value
  double error = 0;     // a - b
  double relative = 0;  // (a - b) / b; NaN when b is 0
};

struct MatchedRow {
  std::string key;  // e.g. "all_reduce float 1048576"
  std::vector<MetricError> metrics;
};

// One table both files were looked for in.
struct TableComparison {
  std::string table;  // "collectives/results"
  std::string key_columns;
  std::vector<MatchedRow> matched;
  std::vector<std::string> only_a, only_b;  // keys of the rows one file alone has
};

struct Comparison {
  std::string file_a, file_b, source_a, source_b;
  std::vector<TableComparison> tables;  // only those at least one file has rows in
  size_t matched_rows() const;
};

// Reads both files and compares every table of the schema that has keyed metrics. Throws
// std::runtime_error naming the file when one cannot be read as a fabtwin result file.
Comparison compare_files(const std::string& a, const std::string& b);

void print_comparison(const Comparison& c, std::ostream& out);
nlohmann::json comparison_json(const Comparison& c);

int command_compare(const std::vector<std::string>& args);

}  // namespace fabtwin
