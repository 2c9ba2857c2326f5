#include "sim/sweep/sweep_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/atomic_file.h"
#include "sim/hdf5_file.h"

namespace fabtwin::sweep {

std::optional<double> metric_value(const nlohmann::json& metrics, const std::string& name) {
  if (metrics.contains(name)) {
    const nlohmann::json& v = metrics[name];
    if (v.is_number()) return v.get<double>();
    return std::nullopt;
  }
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    const std::string base = name.substr(0, dot), group = name.substr(dot + 1);
    if (!metrics.contains(base) || !metrics[base].is_object()) continue;
    const nlohmann::json& groups = metrics[base];
    if (groups.contains(group) && groups[group].is_number()) return groups[group].get<double>();
    return std::nullopt;
  }
  return std::nullopt;
}

Table make_table(const SweepFile& s, const std::vector<Point>& points,
                 const std::vector<std::string>& metrics,
                 const std::function<const nlohmann::json*(size_t point, size_t seed)>& record) {
  Table t;
  t.metrics = metrics;
  for (size_t a = 0; a < s.axes.size(); ++a) {
    t.axes.push_back(s.axes[a].path);
    bool quantity = !points.empty();
    for (const Point& p : points) {
      quantity = quantity && p.values[a].is_string() && base_value(p.values[a]).has_value();
    }
    t.quantity.push_back(quantity);
  }
  for (const Point& p : points) {
    TableRow row;
    row.point = p.index;
    row.values = p.values;
    std::vector<std::vector<double>> samples(metrics.size());
    for (size_t k = 0; k < s.seeds.size(); ++k) {
      const nlohmann::json* r = record(p.index, k);
      if (r == nullptr) continue;
      ++row.seeds;
      for (size_t m = 0; m < metrics.size(); ++m) {
        if (const auto v = metric_value(r->at("metrics"), metrics[m])) samples[m].push_back(*v);
      }
    }
    for (const std::vector<double>& x : samples) row.metrics.push_back(mean_ci95(x));
    t.rows.push_back(std::move(row));
  }
  return t;
}

namespace {

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (const char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// Whole numbers without a fraction, others as the shortest text that reads back the same.
std::string number_text(double x) {
  if (!std::isfinite(x)) return "";
  if (x == std::trunc(x) && std::abs(x) < 9e15) return std::to_string(static_cast<int64_t>(x));
  return nlohmann::json(x).dump();
}

}  // namespace

std::string table_csv(const Table& t) {
  std::string out = "point";
  // Cells appended one by one (GCC 12 warns, wrongly, on "," + std::string temporaries).
  auto cell = [&out](const std::string& text) {
    out += ',';
    out += text;
  };
  for (size_t a = 0; a < t.axes.size(); ++a) {
    cell(csv_cell(t.axes[a]));
    if (t.quantity[a]) cell(csv_cell(t.axes[a] + "_value"));
  }
  cell("seeds");
  for (const std::string& m : t.metrics) {
    cell(csv_cell(m + "_mean"));
    cell(csv_cell(m + "_ci95"));
  }
  out += '\n';
  for (const TableRow& row : t.rows) {
    out += std::to_string(row.point);
    for (size_t a = 0; a < t.axes.size(); ++a) {
      cell(csv_cell(value_text(row.values[a])));
      if (t.quantity[a]) cell(number_text(*base_value(row.values[a])));
    }
    cell(std::to_string(row.seeds));
    for (const MeanCi& m : row.metrics) {
      cell(number_text(m.mean));
      cell(number_text(m.ci95));
    }
    out += '\n';
  }
  return out;
}

void write_table_h5(const Table& t, const std::filesystem::path& file,
                    const std::string& sweep_file, const std::string& version) {
  write_atomically(file, [&](const std::filesystem::path& temp) {
    Hdf5File h5(temp.string());
    h5.attribute("sweep_file", sweep_file);
    h5.attribute("fabtwin_version", version);
    // Columns laid out one after the other in a byte row: numbers as doubles, axes that are not
    // all numbers as fixed-length strings.
    struct Column {
      std::string name;
      size_t offset;
      size_t size;  // 8 for numbers, else the string length
      bool text;
    };
    std::vector<Column> columns;
    size_t row_size = 0;
    auto add = [&](const std::string& name, size_t size, bool text) {
      columns.push_back({name, row_size, size, text});
      row_size += size;
    };
    add("point", 8, false);
    for (size_t a = 0; a < t.axes.size(); ++a) {
      bool numbers = true;
      size_t longest = 1;
      for (const TableRow& r : t.rows) {
        numbers = numbers && r.values[a].is_number();
        longest = std::max(longest, value_text(r.values[a]).size() + 1);
      }
      add(t.axes[a], numbers ? 8 : longest, !numbers);
      if (t.quantity[a]) add(t.axes[a] + "_value", 8, false);
    }
    add("seeds", 8, false);
    for (const std::string& m : t.metrics) {
      add(m + "_mean", 8, false);
      add(m + "_ci95", 8, false);
    }
    std::vector<char> data(row_size * t.rows.size(), 0);
    for (size_t i = 0; i < t.rows.size(); ++i) {
      const TableRow& r = t.rows[i];
      std::vector<double> numbers;
      std::vector<std::string> texts;
      char* row = data.data() + i * row_size;
      size_t c = 0;
      auto put = [&](double x) { std::memcpy(row + columns[c++].offset, &x, sizeof x); };
      put(static_cast<double>(r.point));
      for (size_t a = 0; a < t.axes.size(); ++a) {
        if (columns[c].text) {
          const std::string text = value_text(r.values[a]);
          std::memcpy(row + columns[c].offset, text.data(), std::min(text.size(), columns[c].size));
          ++c;
        } else {
          put(r.values[a].get<double>());
        }
        if (t.quantity[a]) put(*base_value(r.values[a]));
      }
      put(static_cast<double>(r.seeds));
      for (const MeanCi& m : r.metrics) {
        put(m.mean);
        put(m.ci95);
      }
    }
    std::vector<Hdf5Field> fields;
    for (const Column& c : columns) {
      fields.push_back(
          {c.name.c_str(), c.offset, c.text ? h5.fixed_string(c.size) : H5T_NATIVE_DOUBLE});
    }
    h5.table("table", data.data(), t.rows.size(), row_size, fields);
    h5.close();
  });
}

size_t metric_column(const Table& t, const std::string& name) {
  for (size_t m = 0; m < t.metrics.size(); ++m) {
    if (t.metrics[m] == name) return m;
  }
  throw SweepError("objective metric \"" + name + "\" is not one of the sweep's metrics");
}

namespace {

// Whether mean `x` is better than `y` under `o`.
bool better(double x, double y, const Objective& o) {
  return o.maximize ? x > y : x < y;
}

}  // namespace

std::vector<size_t> rank_rows(const Table& t, const Objective& o) {
  const size_t m = metric_column(t, o.metric);
  std::vector<size_t> rows;
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (std::isfinite(t.rows[i].metrics[m].mean)) rows.push_back(i);
  }
  std::stable_sort(rows.begin(), rows.end(), [&](size_t a, size_t b) {
    return better(t.rows[a].metrics[m].mean, t.rows[b].metrics[m].mean, o);
  });
  return rows;
}

std::vector<size_t> pareto_front(const Table& t, const Objective& a, const Objective& b) {
  const size_t ma = metric_column(t, a.metric), mb = metric_column(t, b.metric);
  std::vector<size_t> front;
  for (size_t i : rank_rows(t, a)) {
    const double xa = t.rows[i].metrics[ma].mean, xb = t.rows[i].metrics[mb].mean;
    if (!std::isfinite(xb)) continue;
    bool dominated = false;
    for (size_t j = 0; j < t.rows.size() && !dominated; ++j) {
      const double ya = t.rows[j].metrics[ma].mean, yb = t.rows[j].metrics[mb].mean;
      if (j == i || !std::isfinite(ya) || !std::isfinite(yb)) continue;
      const bool no_worse = !better(xa, ya, a) && !better(xb, yb, b);
      const bool strictly = better(ya, xa, a) || better(yb, xb, b);
      dominated = no_worse && strictly;
    }
    if (!dominated) front.push_back(i);
  }
  return front;
}

}  // namespace fabtwin::sweep
