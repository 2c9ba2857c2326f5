#include "validate/calibration/observations.h"

#include <algorithm>
#include <cmath>

namespace fabtwin::calibration {

const std::vector<Family>& families() {
  static const std::vector<Family> list{
      {"time",
       "collectives/results",
       {"time_us"},
       1.0,
       "collective time per size (nccl-tests' time column), in us"},
      {"busbw",
       "collectives/results",
       {"busbw"},
       0.0,
       "bus bandwidth per size: algbw times a constant of the row, so the same information as "
       "time, rounded to 0.01 GB/s in nccl-tests logs; reported, fitted only with a weight"},
      {"latency",
       "perftest/latency",
       {"t_typical_ps", "t_p99_ps", "t_p999_ps"},
       1.0,
       "perftest latency and its percentiles per message size"},
      {"bandwidth",
       "perftest/bandwidth",
       {"bw_average_bps"},
       1.0,
       "perftest bandwidth per message size"},
      {"fct", "flows", {"fct_ps"}, 1.0, "flow completion time of every flow"},
      {"counters",
       "flows",
       {"cnps_sent", "rate_cuts", "out_of_sequence", "packets_retransmitted"},
       1.0,
       "per-flow counters: CNPs, rate cuts, out-of-sequence packets, retransmissions"},
  };
  return list;
}

TableSpec calibration_table(const std::string& table) {
  for (const TableSpec& spec : table_specs()) {
    if (table != spec.table) continue;
    TableSpec out{spec.table, spec.keys, {}};
    for (const Family& f : families()) {
      if (table == f.table)
        out.metrics.insert(out.metrics.end(), f.metrics.begin(), f.metrics.end());
    }
    return out;
  }
  return {nullptr, {}, {}};
}

namespace {

std::vector<std::string> tables() {
  std::vector<std::string> out;
  for (const Family& f : families()) {
    if (std::find(out.begin(), out.end(), f.table) == out.end()) out.push_back(f.table);
  }
  return out;
}

std::vector<std::string> words(const std::string& key) {
  std::vector<std::string> out;
  size_t from = 0;
  while (from <= key.size()) {
    const size_t space = key.find(' ', from);
    out.push_back(key.substr(from, space - from));
    if (space == std::string::npos) break;
    from = space + 1;
  }
  return out;
}

bool is_counter(const std::string& family) {
  return family == "counters";
}

}  // namespace

std::string value_key(const std::string& table, const std::string& key, const std::string& metric) {
  return table + "|" + key + "|" + metric;
}

std::vector<Observation> read_observations(const ResultFile& measured, size_t case_index) {
  std::vector<Observation> out;
  for (const std::string& table : tables()) {
    const TableSpec spec = calibration_table(table);
    const KeyedRows rows = keyed_rows(measured, spec);
    for (const std::string& key : rows.order) {
      const std::vector<double>& values = rows.values.at(key);
      const std::vector<std::string> w = words(key);
      for (const Family& f : families()) {
        if (table != f.table) continue;
        for (const char* metric : f.metrics) {
          const size_t m = static_cast<size_t>(
              std::find_if(spec.metrics.begin(), spec.metrics.end(),
                           [&](const char* x) { return std::string(x) == metric; }) -
              spec.metrics.begin());
          const double v = values[m];
          if (!std::isfinite(v) || v < 0 || (!is_counter(f.name) && v <= 0)) continue;
          Observation o;
          o.case_index = case_index;
          o.table = table;
          o.key = key;
          o.metric = metric;
          o.family = f.name;
          o.measured = v;
          // Key layouts: collectives (op type size), perftest bandwidth (test sl bytes),
          // perftest latency (test bytes), flows (id src dst size_bytes).
          o.op = table == "flows" ? "flow" : w.front();
          o.size = std::stod(w.back());
          out.push_back(o);
        }
      }
    }
  }
  return out;
}

RowValues read_values(const ResultFile& file) {
  RowValues out;
  for (const std::string& table : tables()) {
    const TableSpec spec = calibration_table(table);
    const KeyedRows rows = keyed_rows(file, spec);
    for (const std::string& key : rows.order) {
      const std::vector<double>& values = rows.values.at(key);
      for (size_t m = 0; m < spec.metrics.size(); ++m) {
        out[value_key(table, key, spec.metrics[m])] = values[m];
      }
    }
  }
  return out;
}

double residual(const Observation& o, double model) {
  if (is_counter(o.family)) return std::log((std::max(model, 0.0) + 1) / (o.measured + 1));
  const double floor = o.measured * 1e-3;
  return std::log(std::max(model, floor) / o.measured);
}

double relative_error(const Observation& o, double model) {
  return o.measured != 0 ? (model - o.measured) / o.measured : std::nan("");
}

}  // namespace fabtwin::calibration
