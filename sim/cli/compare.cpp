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

namespace po = boost::program_options;

namespace fabtwin {
namespace {

// A table with keyed metrics: which columns make a row's key, which are compared.
struct TableSpec {
  const char* table;
  std::vector<const char*> keys;     // text or integer columns
  std::vector<const char*> metrics;  // numeric columns
};

const std::vector<TableSpec>& table_specs() {
  static const std::vector<TableSpec> specs{
      {"collectives/results", {"op", "type", "size"}, {"time_us", "algbw", "busbw"}},
      {"flows", {"id", "src", "dst", "size_bytes"}, {"fct_ps", "goodput_bps"}},
      {"perftest/bandwidth",
       {"test", "sl", "bytes"},
       {"bw_average_bps", "bw_peak_bps", "msg_rate_mpps"}},
      {"perftest/latency",
       {"test", "bytes"},
       {"t_typical_ps", "t_avg_ps", "t_min_ps", "t_max_ps", "t_p99_ps", "t_p999_ps"}},
  };
  return specs;
}

// A read-only result file: its attributes and the columns of its compound tables.
class ResultFile {
 public:
  explicit ResultFile(const std::string& path) : path_(path) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    if (H5Fis_hdf5(path.c_str()) <= 0) fail("is not an HDF5 file");
    file_ = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file_ < 0) fail("cannot be opened");
    if (H5Aexists(file_, "schema_version") <= 0)
      fail("has no schema_version: not a fabtwin result file");
  }
  ~ResultFile() {
    if (file_ >= 0) H5Fclose(file_);
  }
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  std::string text_attribute(const char* name) const {
    if (H5Aexists(file_, name) <= 0) return "";
    const hid_t a = H5Aopen(file_, name, H5P_DEFAULT);
    const hid_t type = H5Aget_type(a);
    std::string value;
    if (H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) > 0) {
      char* s = nullptr;
      const hid_t mem = H5Tcopy(H5T_C_S1);
      H5Tset_size(mem, H5T_VARIABLE);
      H5Tset_cset(mem, H5Tget_cset(type));
      if (H5Aread(a, mem, &s) >= 0 && s != nullptr) value = s;
      if (s != nullptr) H5free_memory(s);
      H5Tclose(mem);
    }
    H5Tclose(type);
    H5Aclose(a);
    return value;
  }

  bool has_table(const std::string& name) const {
    size_t from = 0;
    while (true) {
      const size_t slash = name.find('/', from);
      const std::string prefix = name.substr(0, slash);
      if (H5Lexists(file_, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
      if (slash == std::string::npos) return true;
      from = slash + 1;
    }
  }

  size_t rows(const std::string& table) const {
    const hid_t d = H5Dopen2(file_, table.c_str(), H5P_DEFAULT);
    const hid_t space = H5Dget_space(d);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space, &n, nullptr);
    H5Sclose(space);
    H5Dclose(d);
    return static_cast<size_t>(n);
  }

  bool has_column(const std::string& table, const char* column) const {
    const hid_t d = H5Dopen2(file_, table.c_str(), H5P_DEFAULT);
    const hid_t type = H5Dget_type(d);
    const bool has = H5Tget_member_index(type, column) >= 0;
    H5Tclose(type);
    H5Dclose(d);
    return has;
  }

  // A column as text: strings as stored (NULs cut), numbers in decimal.
  std::vector<std::string> text_column(const std::string& table, const char* column) const {
    const hid_t d = H5Dopen2(file_, table.c_str(), H5P_DEFAULT);
    const hid_t type = H5Dget_type(d);
    const int index = H5Tget_member_index(type, column);
    if (index < 0) fail("has no column " + std::string(column) + " in /" + table);
    const hid_t member = H5Tget_member_type(type, static_cast<unsigned>(index));
    const size_t n = rows(table);
    std::vector<std::string> out(n);
    if (H5Tget_class(member) == H5T_STRING) {
      const size_t width = H5Tget_size(member);
      const hid_t mem = H5Tcreate(H5T_COMPOUND, width);
      const hid_t str = H5Tcopy(H5T_C_S1);
      H5Tset_size(str, width);
      H5Tset_strpad(str, H5T_STR_NULLPAD);
      H5Tinsert(mem, column, 0, str);
      std::vector<char> data(n * width);
      if (n > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0)
        fail("cannot read /" + table);
      for (size_t i = 0; i < n; ++i) {
        const char* s = data.data() + i * width;
        out[i] = std::string(s, strnlen(s, width));
      }
      H5Tclose(str);
      H5Tclose(mem);
    } else {
      const std::vector<double> numbers = read_numbers(d, column, n);
      for (size_t i = 0; i < n; ++i) {
        std::ostringstream text;
        text << std::setprecision(17) << numbers[i];
        out[i] = text.str();
      }
    }
    H5Tclose(member);
    H5Tclose(type);
    H5Dclose(d);
    return out;
  }

  std::vector<double> number_column(const std::string& table, const char* column) const {
    const hid_t d = H5Dopen2(file_, table.c_str(), H5P_DEFAULT);
    std::vector<double> out = read_numbers(d, column, rows(table));
    H5Dclose(d);
    return out;
  }

 private:
  std::vector<double> read_numbers(hid_t d, const char* column, size_t n) const {
    const hid_t mem = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(mem, column, 0, H5T_NATIVE_DOUBLE);
    std::vector<double> out(n);
    if (n > 0 && H5Dread(d, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
      H5Tclose(mem);
      fail(std::string("cannot read the column ") + column + " as numbers");
    }
    H5Tclose(mem);
    return out;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("'" + path_ + "' " + what);
  }

  std::string path_;
  hid_t file_ = -1;
};

// A table's rows by key: each key's metric values (the first row of a repeated key).
struct KeyedRows {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> values;
};

KeyedRows keyed_rows(const ResultFile& f, const TableSpec& spec) {
  KeyedRows out;
  if (!f.has_table(spec.table)) return out;
  std::vector<std::vector<std::string>> keys;
  for (const char* k : spec.keys) keys.push_back(f.text_column(spec.table, k));
  std::vector<std::vector<double>> metrics;
  for (const char* m : spec.metrics) {
    metrics.push_back(
        f.has_column(spec.table, m)
            ? f.number_column(spec.table, m)
            : std::vector<double>(f.rows(spec.table), std::numeric_limits<double>::quiet_NaN()));
  }
  for (size_t i = 0; i < f.rows(spec.table); ++i) {
    std::string key;
    for (const auto& column : keys) key += (key.empty() ? "" : " ") + column[i];
    if (out.values.count(key)) continue;
    std::vector<double> v;
    for (const auto& column : metrics) v.push_back(column[i]);
    out.order.push_back(key);
    out.values[key] = v;
  }
  return out;
}

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
    std::cout << comparison_json(c).dump(2) << "\n";
  } else {
    print_comparison(c, std::cout);
    if (!json.empty()) write_text_atomically(json, comparison_json(c).dump(2) + "\n");
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
