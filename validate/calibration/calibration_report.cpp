#include "validate/calibration/calibration_report.h"

#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "sim/atomic_file.h"
#include "sim/cli/hdf5_table.h"
#include "sim/cli/report.h"
#include "sim/units.h"
#include "validate/calibration/parameter_space.h"

namespace fabtwin::calibration {
namespace {

std::string size_band(double size) {
  if (size <= 64 * 1024.0) return "<=64KiB";
  if (size <= 1024 * 1024.0) return "<=1MiB";
  if (size <= 64 * 1024 * 1024.0) return "<=64MiB";
  return ">64MiB";
}

std::string percent(double x) {
  if (!std::isfinite(x)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(x < 0.1 ? 2 : 1) << 100 * x << " %";
  return s.str();
}

std::string value_text(double v, const std::string& unit) {
  v = FitParameter::rounded(v, 5);
  if (unit == "ps") return format_time(Time{static_cast<int64_t>(std::llround(v))});
  if (unit == "bps") return format_rate(BitsPerSec{static_cast<int64_t>(std::llround(v))});
  if (unit == "B") return format_bytes(Bytes{static_cast<int64_t>(std::llround(v))});
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

nlohmann::json finite(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

template <class R>
nlohmann::json records_json(const std::vector<R>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const R& r : rows) {
    nlohmann::json j;
    for (const Column<R>& c : columns_of<R>()) {
      const Cell cell = c.get(r);
      if (std::holds_alternative<double>(cell)) {
        j[c.name] = finite(std::get<double>(cell));
      } else if (std::holds_alternative<std::string>(cell)) {
        j[c.name] = std::get<std::string>(cell);
      } else if (std::holds_alternative<int64_t>(cell)) {
        j[c.name] = std::get<int64_t>(cell);
      }
    }
    out.push_back(j);
  }
  return out;
}

}  // namespace

std::vector<SliceRecord> slice_errors(const std::vector<RowRecord>& rows) {
  struct Sum {
    int64_t n = 0, n_ab = 0;
    double before = 0, after = 0, max_after = 0, ab = 0;
  };
  // Ordered keys: the report lists slices in a fixed order.
  std::map<std::tuple<int, std::string, int, std::string, std::string>, Sum> sums;
  const std::vector<std::string> by{"all", "metric", "case", "op", "size", "cc", "nodes"};
  for (const RowRecord& r : rows) {
    const std::vector<std::string> values{
        "all", r.metric, r.case_label, r.op, size_band(r.size), r.cc, std::to_string(r.nodes)};
    // A measured 0 (a counter) has no relative error: such rows count in no mean.
    if (!std::isfinite(r.error_before) || !std::isfinite(r.error_after)) continue;
    for (size_t b = 0; b < by.size(); ++b) {
      Sum& s = sums[{r.role == "fit" ? 0 : 1, r.family, static_cast<int>(b), by[b], values[b]}];
      ++s.n;
      s.before += std::abs(r.error_before);
      s.after += std::abs(r.error_after);
      s.max_after = std::max(s.max_after, std::abs(r.error_after));
      if (std::isfinite(r.alpha_beta)) {
        ++s.n_ab;
        s.ab += std::abs((r.alpha_beta - r.measured) / r.measured);
      }
    }
  }
  // A grouping with one value says nothing the "all" row does not: left out.
  std::map<std::tuple<int, std::string, int>, int> groups;
  for (const auto& [k, s] : sums) ++groups[{std::get<0>(k), std::get<1>(k), std::get<2>(k)}];
  std::vector<SliceRecord> out;
  for (const auto& [k, s] : sums) {
    const auto& [role, family, b, name, value] = k;
    if (b > 0 && groups[{role, family, b}] < 2) continue;
    SliceRecord r;
    r.role = role == 0 ? "fit" : "held_out";
    r.by = name;
    r.value = value;
    r.family = family;
    r.rows = s.n;
    r.error_before = s.before / static_cast<double>(s.n);
    r.error_after = s.after / static_cast<double>(s.n);
    r.max_after = s.max_after;
    r.alpha_beta = s.n_ab > 0 ? s.ab / static_cast<double>(s.n_ab) : std::nan("");
    out.push_back(r);
  }
  return out;
}

void print_report(const Report& r, std::ostream& out) {
  const nlohmann::json& p = r.provenance;
  out << "fabtwin calibrate\n";
  for (const nlohmann::json& c : p["cases"]) {
    out << "case " << std::left << std::setw(10) << c["label"].get<std::string>() << " measured "
        << c["measured"].get<std::string>() << " (" << c["source"].get<std::string>() << ", sha256 "
        << c["sha256"].get<std::string>().substr(0, 12) << ")";
    if (!c["scenario"].get<std::string>().empty())
      out << "  scenario " << c["scenario"].get<std::string>();
    out << "\n";
  }
  out << "fitted on   " << p["fit_slice"].get<std::string>() << " (" << r.fit["fit_rows"]
      << " measured metrics, " << r.fit["objective_rows"] << " in the objective)\nheld out    "
      << p["held_out_slice"].get<std::string>() << " (" << r.fit["held_out_rows"] << " metrics)\n";
  for (const std::string& w : r.warnings) out << "warning     " << w << "\n";
  if (!r.parameters.empty()) {
    out << "\nparameters  (method " << r.fit["method"].get<std::string>() << ", "
        << r.fit["evaluations"] << " points in the fit, " << r.fit["simulated_runs"]
        << " runs simulated in all, objective " << std::setprecision(4)
        << r.fit["objective_before"].get<double>() << " -> "
        << r.fit["objective_after"].get<double>() << ")\n";
    out << "  " << std::left << std::setw(34) << "path" << std::setw(14) << "start" << std::setw(24)
        << "fitted" << std::setw(26) << "range"
        << "status\n";
    for (const ParameterRecord& q : r.parameters) {
      std::string fitted = value_text(q.fitted, q.unit);
      if (!std::isfinite(q.standard_error)) {
        fitted += " +- ?";
      } else if (q.standard_error > 0) {
        fitted += " +- " + value_text(q.standard_error, q.unit);
      }
      out << "  " << std::left << std::setw(34) << q.path << std::setw(14)
          << value_text(q.initial, q.unit) << std::setw(28) << fitted << " " << std::setw(25)
          << value_text(q.lo, q.unit) + ".." + value_text(q.hi, q.unit) << q.status << "\n";
      if (!q.reason.empty()) out << "      " << q.reason << "\n";
    }
    for (const nlohmann::json& n : r.fit["notes"])
      out << "  note: " << n.get<std::string>() << "\n";
  }
  for (const std::string role : {"fit", "held_out"}) {
    out << "\n"
        << (role == "fit" ? "in-sample error (the slice fitted on; not validation)"
                          : "held-out error (validation: rows the fit never saw)")
        << "\n";
    bool any = false;
    out << "  " << std::left << std::setw(10) << "family" << std::setw(8) << "by" << std::setw(14)
        << "value" << std::right << std::setw(7) << "rows" << std::setw(12) << "before"
        << std::setw(12) << "after" << std::setw(12) << "max after" << std::setw(13) << "alpha-beta"
        << "\n";
    for (const SliceRecord& s : r.slices) {
      if (s.role != role) continue;
      any = true;
      out << "  " << std::left << std::setw(10) << s.family << std::setw(8) << s.by << std::setw(14)
          << s.value << std::right << std::setw(7) << s.rows << std::setw(12)
          << percent(s.error_before) << std::setw(12) << percent(s.error_after) << std::setw(12)
          << percent(s.max_after) << std::setw(13) << percent(s.alpha_beta) << "\n";
    }
    if (!any) {
      out << "  (none"
          << (role == "held_out" ? ": without a held-out slice there is no validation" : "")
          << ")\n";
    }
  }
  out << "  errors are mean |model - measured| / measured; alpha-beta: the closed-form model "
         "T = a + S/b fitted on the same slice\n";
}

nlohmann::json report_json(const Report& r) {
  nlohmann::json j;
  j["provenance"] = r.provenance;
  j["fit"] = r.fit;
  j["warnings"] = r.warnings;
  j["parameters"] = records_json(r.parameters);
  j["slices"] = records_json(r.slices);
  j["rows"] = records_json(r.rows);
  return j;
}

void write_report_hdf5(const Report& r, const std::string& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) {
    Hdf5File h5(temp.string());
    h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
    h5.attribute("source", std::string("calibration"));
    h5.attribute("provenance", r.provenance.dump());
    h5.attribute("fit", r.fit.dump());
    h5.group("calibration");
    for_each_calibration_table(
        r, [&](const std::string& name, const auto& rows) { write_table(h5, name, rows); });
    h5.close();
  });
}

}  // namespace fabtwin::calibration
