#include "sim/cli/compare.h"

#include <hdf5.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/atomic_file.h"
#include "sim/cli/result_tables.h"
#include "sim/utf8_text.h"

namespace po = boost::program_options;

namespace fabtwin {
namespace {

// perftest writes -1 where a column is absent; such a value is not compared.
bool comparable(double v) {
  return std::isfinite(v) && v >= 0;
}

std::string number(double v, int precision = 4) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream out;
  out << std::setprecision(precision) << v;
  return out.str();
}

std::string percent(double relative) {
  if (!std::isfinite(relative)) return "-";
  std::ostringstream out;
  out << std::fixed << std::setprecision(1) << 100 * relative;
  return out.str();
}

}  // namespace

size_t Comparison::matched_rows() const {
  size_t n = 0;
  for (const TableComparison& t : tables) n += t.matched.size();
  return n;
}

Comparison compare_files(const std::string& a, const std::string& b) {
  const ResultFile fa(a), fb(b);
  Comparison c;
  c.file_a = a;
  c.file_b = b;
  c.source_a = fa.text_attribute("source");
  c.source_b = fb.text_attribute("source");
  for (const TableSpec& spec : table_specs()) {
    const KeyedRows ra = keyed_rows(fa, spec), rb = keyed_rows(fb, spec);
    if (ra.order.empty() && rb.order.empty()) continue;
    TableComparison t;
    t.table = spec.table;
    for (const char* k : spec.keys)
      t.key_columns += (t.key_columns.empty() ? "" : ", ") + std::string(k);
    for (const std::string& key : ra.order) {
      const auto other = rb.values.find(key);
      if (other == rb.values.end()) {
        t.only_a.push_back(key);
        continue;
      }
      MatchedRow row{key, {}};
      const std::vector<double>& va = ra.values.at(key);
      for (size_t m = 0; m < spec.metrics.size(); ++m) {
        const double x = va[m], y = other->second[m];
        if (!comparable(x) || !comparable(y)) continue;
        row.metrics.push_back({spec.metrics[m], x, y, x - y,
                               y != 0 ? (x - y) / y : std::numeric_limits<double>::quiet_NaN()});
      }
      t.matched.push_back(row);
    }
    for (const std::string& key : rb.order) {
      if (!ra.values.count(key)) t.only_b.push_back(key);
    }
    c.tables.push_back(t);
  }
  return c;
}

void print_comparison(const Comparison& c, std::ostream& out) {
  out << "compare  A = " << c.file_a << " (" << (c.source_a.empty() ? "?" : c.source_a) << ")\n"
      << "         B = " << c.file_b << " (" << (c.source_b.empty() ? "?" : c.source_b) << ")\n"
      << "error = A - B, relative to B\n";
  for (const TableComparison& t : c.tables) {
    out << "\n/" << t.table << "  matched by (" << t.key_columns << "): " << t.matched.size()
        << " rows matched, " << t.only_a.size() << " only in A, " << t.only_b.size()
        << " only in B\n";
    if (!t.matched.empty()) {
      out << "  " << std::left << std::setw(34) << "row" << std::setw(16) << "metric" << std::right
          << std::setw(14) << "A" << std::setw(14) << "B" << std::setw(14) << "error"
          << std::setw(10) << "rel %"
          << "\n";
    }
    std::map<std::string, std::pair<double, size_t>> mean;  // metric -> (sum |rel|, count)
    for (const MatchedRow& r : t.matched) {
      for (const MetricError& m : r.metrics) {
        out << "  " << std::left << std::setw(34) << r.key << std::setw(16) << m.metric
            << std::right << std::setw(14) << number(m.a, 6) << std::setw(14) << number(m.b, 6)
            << std::setw(14) << number(m.error, 4) << std::setw(10) << percent(m.relative) << "\n";
        if (std::isfinite(m.relative)) {
          mean[m.metric].first += std::abs(m.relative);
          ++mean[m.metric].second;
        }
      }
    }
    for (const auto& [metric, s] : mean) {
      out << "  mean |rel. error| of " << metric << ": " << percent(s.first / s.second)
          << " % over " << s.second << " rows\n";
    }
    for (const std::string& k : t.only_a) out << "  only in A: " << k << "\n";
    for (const std::string& k : t.only_b) out << "  only in B: " << k << "\n";
  }
}

nlohmann::json comparison_json(const Comparison& c) {
  const auto finite = [](double v) {
    return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
  };
  nlohmann::json j;
  j["a"] = {{"file", c.file_a}, {"source", c.source_a}};
  j["b"] = {{"file", c.file_b}, {"source", c.source_b}};
  j["matched_rows"] = c.matched_rows();
  j["tables"] = nlohmann::json::array();
  for (const TableComparison& t : c.tables) {
    nlohmann::json table;
    table["table"] = t.table;
    table["key"] = t.key_columns;
    table["matched"] = nlohmann::json::array();
    for (const MatchedRow& r : t.matched) {
      nlohmann::json row;
      row["key"] = r.key;
      for (const MetricError& m : r.metrics) {
        row["metrics"][m.metric] = {
            {"a", m.a}, {"b", m.b}, {"error", m.error}, {"relative_error", finite(m.relative)}};
      }
      table["matched"].push_back(row);
    }
    table["only_in_a"] = t.only_a;
    table["only_in_b"] = t.only_b;
    j["tables"].push_back(table);
  }
  return j;
}

int command_compare(const std::vector<std::string>& args) {
  po::options_description opts("fabtwin compare SIM.h5 HW.h5 [--json FILE|-]");
  std::string json;
  opts.add_options()("help,h", "this help")(
      "json", po::value(&json), "write the comparison as JSON to FILE, or to stdout with -")(
      "files", po::value<std::vector<std::string>>(), "the two result files");
  po::positional_options_description positional;
  positional.add("files", 2);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(positional).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (!vm.count("files") || vm["files"].as<std::vector<std::string>>().size() != 2) {
    throw po::error("give two result files: fabtwin compare SIM.h5 HW.h5");
  }
  const auto files = vm["files"].as<std::vector<std::string>>();
  if (!json.empty() && json != "-") check_writable(json, "--json");
  const Comparison c = compare_files(files[0], files[1]);
  if (json == "-") {
    std::cout << json_document(comparison_json(c));
  } else {
    print_comparison(c, std::cout);
    if (!json.empty()) write_text_atomically(json, json_document(comparison_json(c)));
  }
  if (c.matched_rows() == 0) {
    std::cerr << "fabtwin compare: " << files[0] << " and " << files[1]
              << " have no rows in common (";
    if (c.tables.empty()) {
      std::cerr << "neither has flows, nccl-tests or perftest rows";
    } else {
      for (size_t i = 0; i < c.tables.size(); ++i) {
        const TableComparison& t = c.tables[i];
        std::cerr << (i ? "; " : "") << "/" << t.table << ": " << t.only_a.size()
                  << " rows in the first, " << t.only_b.size()
                  << " in the second, none with the same " << t.key_columns;
      }
    }
    std::cerr << ")\n";
    return 1;
  }
  return 0;
}

}  // namespace fabtwin
