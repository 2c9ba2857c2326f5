#include "sim/sweep/sweep_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "sim/file_contents.h"
#include "sim/params.h"
#include "sim/rng.h"
#include "sim/units.h"

namespace fabtwin::sweep {

namespace {

[[noreturn]] void fail(const std::string& key, const std::string& what) {
  throw SweepError("sweep file error at " + key + ": " + what);
}

void only_keys(const nlohmann::json& j, const std::string& where,
               const std::set<std::string>& known) {
  std::string list;
  for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) {
      fail(where.empty() ? key : where + "." + key, "unknown key; expected one of " + list);
    }
  }
}

// Twelve significant digits: log steps such as 5 * 2^1 come out as 10, not 9.999999999999998.
std::string format_number(double x) {
  char text[64];
  std::snprintf(text, sizeof text, "%.12g", x);
  return text;
}

bool is_number_text(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

double positive_number(const nlohmann::json& j, const std::string& key) {
  if (!j.is_number() || !(j.get<double>() > 0) || !std::isfinite(j.get<double>())) {
    fail(key, "expected a number above 0, found " + json_text(j));
  }
  return j.get<double>();
}

Axis read_axis(const nlohmann::json& j, const std::string& where, bool continuous_design) {
  if (!j.is_object()) fail(where, "expected an axis object, found " + json_text(j));
  only_keys(j, where, {"path", "values", "range", "tie"});
  Axis a;
  if (!j.contains("path") || !j["path"].is_string() || j["path"].get<std::string>().empty()) {
    fail(where + ".path", "expected a scenario path such as \"nic.cc.dce_tcp_g\"");
  }
  a.path = j["path"];
  try {
    split_path(a.path);
  } catch (const ScenarioError& e) {
    fail(where + ".path", e.what());
  }
  if (a.path == "run.seed") {
    fail(where + ".path",
         "run.seed is set by \"seeds\" (every point runs with each): list the "
         "seeds there, found an axis over it");
  }
  const int kinds = static_cast<int>(j.contains("values")) + static_cast<int>(j.contains("range")) +
                    static_cast<int>(j.contains("tie"));
  if (kinds != 1) {
    fail(where, "expected exactly one of values, range or tie, found " + std::to_string(kinds));
  }
  if (j.contains("values")) {
    const nlohmann::json& v = j["values"];
    if (!v.is_array() || v.empty()) {
      fail(where + ".values", "expected a non-empty list of values, found " + json_text(v));
    }
    a.kind = Axis::Kind::Values;
    for (const nlohmann::json& x : v) {
      if (std::find(a.values.begin(), a.values.end(), x) != a.values.end()) {
        fail(where + ".values", "the value " + json_text(x) + " is listed twice");
      }
      a.values.push_back(x);
    }
  } else if (j.contains("range")) {
    const nlohmann::json& r = j["range"];
    const std::string rw = where + ".range";
    if (!r.is_object()) fail(rw, "expected {\"from\", \"to\", \"steps\", \"scale\"}");
    only_keys(r, rw, {"from", "to", "steps", "scale"});
    a.kind = Axis::Kind::Range;
    if (!r.contains("from") || !r.contains("to"))
      fail(rw, "expected both from and to, found " + json_text(r));
    const auto from = split_quantity(r["from"]), to = split_quantity(r["to"]);
    if (!from) fail(rw + ".from", "expected a number or a quantity, found " + json_text(r["from"]));
    if (!to) fail(rw + ".to", "expected a number or a quantity, found " + json_text(r["to"]));
    if (from->unit != to->unit) {
      fail(rw, "expected from and to in the same unit, found \"" + from->unit + "\" and \"" +
                   to->unit + "\"");
    }
    a.from = from->number;
    a.to = to->number;
    a.unit = from->unit;
    a.integer = r["from"].is_number_integer() && r["to"].is_number_integer();
    const nlohmann::json scale_json = r.value("scale", nlohmann::json("linear"));
    const std::string scale = scale_json.is_string() ? scale_json.get<std::string>() : "";
    if (scale != "linear" && scale != "log") {
      fail(rw + ".scale", "expected linear or log, found " + json_text(r["scale"]));
    }
    a.log = scale == "log";
    if (a.log && (a.from <= 0 || a.to <= 0)) {
      fail(rw, "a log scale needs from and to above 0, found " + json_text(r["from"]) + " and " +
                   json_text(r["to"]));
    }
    if (r.contains("steps")) {
      if (!r["steps"].is_number_integer() || r["steps"].get<int64_t>() < 2 ||
          r["steps"].get<int64_t>() > 100000) {
        fail(rw + ".steps",
             "expected a whole number of values from 2 to 100000 (ends included), "
             "found " +
                 json_text(r["steps"]));
      }
      a.steps = r["steps"].get<int>();
    } else if (!continuous_design) {
      fail(rw + ".steps", "a grid needs the number of values (ends included)");
    }
    for (int i = 0; i < a.steps; ++i) {
      const double f = static_cast<double>(i) / (a.steps - 1);
      double x = a.log ? a.from * std::pow(a.to / a.from, f) : a.from + (a.to - a.from) * f;
      if (i == a.steps - 1) x = a.to;
      if (a.integer) x = std::round(x);
      const nlohmann::json value = join_quantity(x, a.unit, a.integer);
      if (std::find(a.values.begin(), a.values.end(), value) == a.values.end()) {
        a.values.push_back(value);
      }
    }
  } else {
    const nlohmann::json& t = j["tie"];
    const std::string tw = where + ".tie";
    if (!t.is_object())
      fail(tw, "expected {\"to\": PATH, \"times\": NUMBER}, found " + json_text(t));
    only_keys(t, tw, {"to", "times"});
    a.kind = Axis::Kind::Tie;
    if (!t.contains("to") || !t["to"].is_string()) {
      fail(tw + ".to", "expected another axis's path, found " +
                           (t.contains("to") ? json_text(t["to"]) : std::string("nothing")));
    }
    a.tie_to = t["to"];
    a.times = t.contains("times") ? positive_number(t["times"], tw + ".times") : 1.0;
  }
  return a;
}

Constraint::Side read_side(const std::string& text, const std::string& where) {
  Constraint::Side side;
  std::string s = trim(text);
  const size_t star = s.find('*');
  if (star != std::string::npos) {
    const std::string k = trim(s.substr(0, star));
    if (!is_number_text(k)) fail(where, "expected NUMBER * OPERAND, found \"" + s + "\"");
    side.factor = std::stod(k);
    s = trim(s.substr(star + 1));
  }
  if (s.empty())
    fail(where, "expected an operand on each side of the operator, found an empty one");
  if (is_number_text(s)) {
    side.constant = std::stod(s);
  } else if ((s[0] >= '0' && s[0] <= '9') || s[0] == '.' || s[0] == '-') {
    side.constant = s;
    if (!base_value(side.constant)) fail(where, "expected a quantity, found \"" + s + "\"");
  } else {
    side.path = s;
    try {
      split_path(s);
    } catch (const ScenarioError& e) {
      fail(where, e.what());
    }
  }
  return side;
}

Constraint read_constraint(const nlohmann::json& j, const std::string& where) {
  if (!j.is_string())
    fail(where, "expected text such as \"a.kmin < a.kmax\", found " + json_text(j));
  Constraint c;
  c.text = j;
  for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
    const size_t at = c.text.find(op);
    if (at == std::string::npos) continue;
    c.op = op;
    c.left = read_side(c.text.substr(0, at), where);
    c.right = read_side(c.text.substr(at + c.op.size()), where);
    return c;
  }
  fail(where, "expected LEFT OP RIGHT with OP one of < <= > >= == !=, found \"" + c.text + "\"");
}

}  // namespace

std::optional<Quantity> split_quantity(const nlohmann::json& value) {
  if (value.is_number()) return Quantity{value.get<double>(), ""};
  if (!value.is_string()) return std::nullopt;
  const std::string s = value;
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  // strtod also reads "inf", "nan" and hexadecimal: none is a number of a scenario.
  const size_t read = static_cast<size_t>(end - s.c_str());
  if (read == 0 || !std::isfinite(x) || s.find_first_not_of("0123456789+-.eE \t") < read) {
    return std::nullopt;
  }
  // "1e3KB" aside, exponents would eat units such as "5e" - none exists; keep the text simple.
  return Quantity{x, trim(std::string(end))};
}

nlohmann::json join_quantity(double number, const std::string& unit, bool integer) {
  if (unit.empty()) {
    if (integer) return static_cast<int64_t>(std::llround(number));
    return nlohmann::json::parse(format_number(number));
  }
  // Sizes, times and rates are whole bytes, picoseconds and b/s: round to the base unit.
  if (const auto one = base_value("1" + unit); one && *one > 0) {
    number = std::round(number * *one) / *one;
  }
  return format_number(number) + unit;
}

std::optional<double> base_value(const nlohmann::json& value, std::string* dimension) {
  auto say = [&](const char* d) {
    if (dimension) *dimension = d;
  };
  if (value.is_number()) {
    say("number");
    return value.get<double>();
  }
  if (!value.is_string()) return std::nullopt;
  const std::string s = value;
  try {
    const double x = static_cast<double>(parse_time(s).ps);
    say("time");
    return x;
  } catch (const std::exception&) {
  }
  try {
    const double x = static_cast<double>(parse_bytes(s).count);
    say("size");
    return x;
  } catch (const std::exception&) {
  }
  try {
    const double x = static_cast<double>(parse_rate(s).bps);
    say("rate");
    return x;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

Objective parse_objective(const std::string& text, const std::string& where) {
  const std::string s = trim(text);
  Objective o;
  if (s.rfind("min ", 0) == 0) {
    o.maximize = false;
  } else if (s.rfind("max ", 0) == 0) {
    o.maximize = true;
  } else {
    fail(where, "expected \"min METRIC\" or \"max METRIC\", found \"" + text + "\"");
  }
  o.metric = trim(s.substr(4));
  if (o.metric.empty()) fail(where, "expected a metric name after min/max");
  return o;
}

SweepFile parse_sweep(const nlohmann::json& j, const std::filesystem::path& file) {
  if (!j.is_object()) fail("(top level)", "expected a JSON object, found " + json_text(j));
  only_keys(j, "",
            {"description", "scenario", "set", "axes", "design", "seeds", "constraints", "metrics",
             "objectives", "$schema"});
  SweepFile s;
  s.file = file;
  if (j.contains("description")) {
    if (!j["description"].is_string()) fail("description", "expected text");
    s.description = j["description"];
  }
  if (!j.contains("scenario") || !j["scenario"].is_string()) {
    fail("scenario", "expected the base scenario's path, relative to the sweep file");
  }
  s.scenario = file.parent_path() / j["scenario"].get<std::string>();
  if (j.contains("set")) {
    if (!j["set"].is_object()) fail("set", "expected an object of path: value overrides");
    for (const auto& [path, value] : j["set"].items()) {
      if (path == "run.seed") {
        fail("set.run.seed", "run.seed is set by \"seeds\" (every point runs with each), found " +
                                 json_text(value));
      }
      s.set.push_back(path + "=" + value.dump());
    }
  }
  // design first: whether ranges need steps depends on it
  if (j.contains("design")) {
    const nlohmann::json& d = j["design"];
    if (!d.is_object() || !d.contains("type") || !d["type"].is_string()) {
      fail("design",
           "expected {\"type\": \"grid\" | \"random\" | \"latin_hypercube\", ...}, found " +
               json_text(d));
    }
    only_keys(d, "design", {"type", "points", "seed"});
    const std::string type = d["type"];
    if (type == "grid") {
      s.design = SweepFile::Design::Grid;
      if (d.contains("points") || d.contains("seed"))
        fail("design", "a grid takes neither points nor seed (it is every combination)");
    } else if (type == "random" || type == "latin_hypercube") {
      s.design = type == "random" ? SweepFile::Design::Random : SweepFile::Design::LatinHypercube;
      if (!d.contains("points") || !d["points"].is_number_integer() ||
          d["points"].get<int64_t>() < 1 || d["points"].get<int64_t>() > 1000000) {
        fail("design.points", "expected the number of points to draw, 1 to 1000000, found " +
                                  (d.contains("points") ? json_text(d["points"]) : "nothing"));
      }
      s.points = d["points"].get<size_t>();
      if (d.contains("seed")) {
        if (!d["seed"].is_number_integer() || d["seed"].get<int64_t>() < 0)
          fail("design.seed", "expected a whole number >= 0, found " + json_text(d["seed"]));
        s.design_seed = d["seed"].get<uint64_t>();
      }
    } else {
      fail("design.type", "expected grid, random or latin_hypercube, found \"" + type + "\"");
    }
  }
  const bool continuous = s.design != SweepFile::Design::Grid;
  if (!j.contains("axes") || !j["axes"].is_array() || j["axes"].empty()) {
    fail("axes", "expected a non-empty list of axes, found " +
                     (j.contains("axes") ? json_text(j["axes"]) : std::string("nothing")));
  }
  for (size_t i = 0; i < j["axes"].size(); ++i) {
    const std::string where = "axes[" + std::to_string(i) + "]";
    Axis a = read_axis(j["axes"][i], where, continuous);
    for (const Axis& b : s.axes) {
      if (b.path == a.path) fail(where + ".path", "\"" + a.path + "\" is already an axis");
    }
    s.axes.push_back(std::move(a));
  }
  for (size_t i = 0; i < s.axes.size(); ++i) {
    Axis& a = s.axes[i];
    if (a.kind != Axis::Kind::Tie) continue;
    const std::string where = "axes[" + std::to_string(i) + "].tie.to";
    bool found = false;
    for (size_t k = 0; k < s.axes.size(); ++k) {
      if (s.axes[k].path != a.tie_to) continue;
      if (s.axes[k].kind == Axis::Kind::Tie) fail(where, "ties to another tie; tie to its source");
      a.tie_axis = k;
      found = true;
    }
    if (!found) fail(where, "expected the path of another axis, found \"" + a.tie_to + "\"");
  }
  if (std::all_of(s.axes.begin(), s.axes.end(),
                  [](const Axis& a) { return a.kind == Axis::Kind::Tie; })) {
    fail("axes", "every axis is a tie");
  }
  if (j.contains("seeds")) {
    const nlohmann::json& seeds = j["seeds"];
    s.seeds.clear();
    if (seeds.is_number_integer()) {
      const int64_t n = seeds.get<int64_t>();
      if (n < 1 || n > 100000)
        fail("seeds", "expected a count from 1 to 100000, or a list, found " + json_text(seeds));
      for (int64_t k = 1; k <= n; ++k) s.seeds.push_back(static_cast<uint64_t>(k));
    } else if (seeds.is_array() && !seeds.empty()) {
      for (size_t i = 0; i < seeds.size(); ++i) {
        if (!seeds[i].is_number_integer() || seeds[i].get<int64_t>() < 0) {
          fail("seeds[" + std::to_string(i) + "]",
               "expected a seed (a whole number >= 0), found " + json_text(seeds[i]));
        }
        const uint64_t seed = seeds[i];
        if (std::find(s.seeds.begin(), s.seeds.end(), seed) != s.seeds.end()) {
          fail("seeds[" + std::to_string(i) + "]", "seed " + std::to_string(seed) + " twice");
        }
        s.seeds.push_back(seed);
      }
    } else {
      fail("seeds",
           "expected a count of seeds (run.seed 1..N) or a non-empty list of seeds, found " +
               json_text(seeds));
    }
  }
  if (j.contains("constraints")) {
    if (!j["constraints"].is_array())
      fail("constraints", "expected a list, found " + json_text(j["constraints"]));
    for (size_t i = 0; i < j["constraints"].size(); ++i) {
      s.constraints.push_back(
          read_constraint(j["constraints"][i], "constraints[" + std::to_string(i) + "]"));
    }
  }
  if (j.contains("metrics")) {
    if (!j["metrics"].is_array())
      fail("metrics", "expected a list of metric names, found " + json_text(j["metrics"]));
    for (size_t i = 0; i < j["metrics"].size(); ++i) {
      const std::string where = "metrics[" + std::to_string(i) + "]";
      if (!j["metrics"][i].is_string())
        fail(where, "expected a metric name, found " + json_text(j["metrics"][i]));
      const std::string name = j["metrics"][i];
      if (std::find(s.metrics.begin(), s.metrics.end(), name) != s.metrics.end()) {
        fail(where, "\"" + name + "\" is listed twice");
      }
      s.metrics.push_back(name);
    }
  }
  if (j.contains("objectives")) {
    if (!j["objectives"].is_array() || j["objectives"].size() > 2) {
      fail("objectives", "expected a list of one or two \"min METRIC\" / \"max METRIC\", found " +
                             json_text(j["objectives"]));
    }
    for (size_t i = 0; i < j["objectives"].size(); ++i) {
      const std::string where = "objectives[" + std::to_string(i) + "]";
      if (!j["objectives"][i].is_string()) {
        fail(where,
             "expected \"min METRIC\" or \"max METRIC\", found " + json_text(j["objectives"][i]));
      }
      s.objectives.push_back(parse_objective(j["objectives"][i], where));
    }
  }
  return s;
}

SweepFile read_sweep_file(const std::filesystem::path& file) {
  std::string text;
  nlohmann::json j;
  try {
    text = file_contents(file, "JSON file");
    j = parse_json_text(text, file.string(), "");
  } catch (const std::runtime_error& e) {  // the file unreadable, or a ScenarioError of its JSON
    throw SweepError(std::string("sweep file: ") + e.what());
  }
  SweepFile s = parse_sweep(j, file);
  s.text = std::move(text);
  return s;
}

std::vector<std::string> point_overrides(const SweepFile& s,
                                         const std::vector<nlohmann::json>& values) {
  std::vector<std::string> out;
  for (size_t a = 0; a < s.axes.size(); ++a) out.push_back(s.axes[a].path + "=" + values[a].dump());
  return out;
}

std::string describe_point(const SweepFile& s, const std::vector<nlohmann::json>& values) {
  std::string out;
  for (const std::string& o : point_overrides(s, values)) out += (out.empty() ? "" : ", ") + o;
  return out;
}

namespace {

// One free axis's value at fraction `u` of its span (random and Latin-hypercube designs).
nlohmann::json value_at(const Axis& a, double u) {
  if (a.kind == Axis::Kind::Values) {
    const size_t n = a.values.size();
    return a.values[std::min(n - 1, static_cast<size_t>(u * static_cast<double>(n)))];
  }
  double x = a.log ? a.from * std::pow(a.to / a.from, u) : a.from + (a.to - a.from) * u;
  if (a.integer) x = std::round(x);
  return join_quantity(x, a.unit, a.integer);
}

void fill_ties(const SweepFile& s, std::vector<nlohmann::json>& values) {
  for (size_t i = 0; i < s.axes.size(); ++i) {
    const Axis& a = s.axes[i];
    if (a.kind != Axis::Kind::Tie) continue;
    const nlohmann::json& source = values[a.tie_axis];
    const auto q = split_quantity(source);
    if (!q) {
      fail("axes[" + std::to_string(i) + "].tie",
           "the value " + json_text(source) + " of " + a.tie_to + " is not a number or quantity");
    }
    const double x = q->number * a.times;
    values[i] = join_quantity(
        x, q->unit, source.is_number_integer() && x == std::round(x) && std::abs(x) < 9e15);
  }
}

}  // namespace

std::vector<std::vector<nlohmann::json>> design_values(const SweepFile& s) {
  std::vector<std::vector<nlohmann::json>> out;
  const size_t n_axes = s.axes.size();
  if (s.design == SweepFile::Design::Grid) {
    size_t total = 1;
    for (const Axis& a : s.axes) {
      if (a.kind == Axis::Kind::Tie) continue;
      total *= a.values.size();
      if (total > 10'000'000) fail("axes", "the grid has more than 10,000,000 points");
    }
    for (size_t p = 0; p < total; ++p) {
      std::vector<nlohmann::json> v(n_axes);
      size_t rest = p;
      for (size_t i = n_axes; i-- > 0;) {  // the last axis varies fastest
        const Axis& a = s.axes[i];
        if (a.kind == Axis::Kind::Tie) continue;
        v[i] = a.values[rest % a.values.size()];
        rest /= a.values.size();
      }
      fill_ties(s, v);
      out.push_back(std::move(v));
    }
    return out;
  }
  Rng rng(s.design_seed, 0x5eed);
  if (s.design == SweepFile::Design::Random) {
    for (size_t p = 0; p < s.points; ++p) {
      std::vector<nlohmann::json> v(n_axes);
      for (size_t i = 0; i < n_axes; ++i) {
        if (s.axes[i].kind != Axis::Kind::Tie) v[i] = value_at(s.axes[i], rng.uniform());
      }
      fill_ties(s, v);
      out.push_back(std::move(v));
    }
    return out;
  }
  // Latin hypercube (McKay, Beckman & Conover 1979): each free axis's span cut into `points`
  // equal strata, one point in each, the strata of the axes paired by random permutations.
  const size_t n = s.points;
  std::vector<std::vector<double>> u(n_axes, std::vector<double>(n));
  for (size_t i = 0; i < n_axes; ++i) {
    if (s.axes[i].kind == Axis::Kind::Tie) continue;
    std::vector<size_t> perm(n);
    for (size_t k = 0; k < n; ++k) perm[k] = k;
    for (size_t k = n; k > 1; --k) std::swap(perm[k - 1], perm[rng.below(k)]);  // Fisher-Yates
    for (size_t k = 0; k < n; ++k) {
      u[i][k] = (static_cast<double>(perm[k]) + rng.uniform()) / static_cast<double>(n);
    }
  }
  for (size_t p = 0; p < n; ++p) {
    std::vector<nlohmann::json> v(n_axes);
    for (size_t i = 0; i < n_axes; ++i) {
      if (s.axes[i].kind != Axis::Kind::Tie) v[i] = value_at(s.axes[i], u[i][p]);
    }
    fill_ties(s, v);
    out.push_back(std::move(v));
  }
  return out;
}

bool satisfies(const Constraint& c, const nlohmann::json& root, size_t index) {
  auto side = [&](const Constraint::Side& sd, std::string& dimension) {
    const nlohmann::json* value = &sd.constant;
    if (!sd.path.empty()) {
      value = find_path(root, sd.path);
      if (value == nullptr) {
        throw SweepError("constraint \"" + c.text + "\": point " + std::to_string(index) +
                         " has no value at " + sd.path);
      }
    }
    const auto x = base_value(*value, &dimension);
    if (!x) {
      throw SweepError("constraint \"" + c.text + "\": point " + std::to_string(index) + " has " +
                       json_text(*value) + (sd.path.empty() ? "" : " at " + sd.path) +
                       ", not a number or quantity");
    }
    return sd.factor * *x;
  };
  std::string dl, dr;
  const double l = side(c.left, dl), r = side(c.right, dr);
  if (dl != dr && dl != "number" && dr != "number") {
    throw SweepError("constraint \"" + c.text + "\": compares a " + dl + " with a " + dr);
  }
  if (c.op == "<") return l < r;
  if (c.op == "<=") return l <= r;
  if (c.op == ">") return l > r;
  if (c.op == ">=") return l >= r;
  if (c.op == "==") return l == r;
  return l != r;
}

std::vector<Point> expand(const SweepFile& s, const nlohmann::json& base) {
  auto make = [&](std::vector<nlohmann::json> values, size_t index) {
    Point p;
    p.index = index;
    p.root = base;
    const std::vector<std::string> overrides = point_overrides(s, values);
    for (const std::string& o : overrides) {
      try {
        apply_override(p.root, o);
      } catch (const ScenarioError& e) {
        throw SweepError("point " + std::to_string(index) + " (" + describe_point(s, values) +
                         "): " + e.what());
      }
    }
    p.values = std::move(values);
    return p;
  };
  auto keep = [&](const Point& p, std::vector<size_t>& broken) {
    for (size_t c = 0; c < s.constraints.size(); ++c) {
      bool ok = false;
      try {
        ok = satisfies(s.constraints[c], p.root, p.index);
      } catch (const SweepError& e) {
        throw SweepError("sweep file error at constraints[" + std::to_string(c) + "]: " + e.what());
      }
      if (!ok) {
        ++broken[c];
        return false;
      }
    }
    return true;
  };
  std::vector<Point> points;
  std::vector<size_t> broken(s.constraints.size(), 0);
  size_t tried = 0;
  if (s.design == SweepFile::Design::Random && !s.constraints.empty()) {
    // Draw until `points` satisfy the constraints: the design with more points, cut.
    SweepFile more = s;
    for (size_t attempt = 0; points.size() < s.points && attempt < 12; ++attempt) {
      more.points = s.points << (attempt + 1);
      points.clear();
      broken.assign(s.constraints.size(), 0);
      tried = 0;
      for (std::vector<nlohmann::json>& v : design_values(more)) {
        Point p = make(std::move(v), points.size());
        ++tried;
        if (keep(p, broken)) points.push_back(std::move(p));
        if (points.size() == s.points) break;
      }
    }
  } else {
    for (std::vector<nlohmann::json>& v : design_values(s)) {
      Point p = make(std::move(v), points.size());
      ++tried;
      if (keep(p, broken)) points.push_back(std::move(p));
    }
  }
  for (size_t c = 0; c < s.constraints.size(); ++c) {
    if (broken[c] == tried) {
      throw SweepError("sweep file error at constraints[" + std::to_string(c) + "]: \"" +
                       s.constraints[c].text + "\" is broken by every point of the design");
    }
  }
  if (points.empty()) {
    throw SweepError("sweep file error at constraints: no point of the design satisfies them all");
  }
  if (s.design == SweepFile::Design::Random && points.size() < s.points) {
    throw SweepError("sweep file error at constraints: only " + std::to_string(points.size()) +
                     " of " + std::to_string(tried) + " random draws satisfy them, fewer than " +
                     "design.points = " + std::to_string(s.points));
  }
  return points;
}

std::string run_key(const std::string& version, const nlohmann::json& scenario) {
  return text_hash(version + "\n" + scenario.dump());
}

std::string text_hash(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  uint64_t state = h;
  const uint64_t mixed = splitmix64(state);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(mixed));
  return out;
}

}  // namespace fabtwin::sweep
