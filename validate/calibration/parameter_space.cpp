#include "validate/calibration/parameter_space.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/scenario_file.h"
#include "sim/units.h"

namespace fabtwin::calibration {
namespace {

// "traffic[type=collective]" or "traffic[0]" -> "traffic"; selectors kept in `selectors`.
std::string strip_selectors(const std::string& path, std::vector<std::string>* selectors) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] != '[') {
      out += path[i];
      continue;
    }
    const size_t close = path.find(']', i);
    if (close == std::string::npos) return out;
    if (selectors != nullptr) selectors->push_back(path.substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

bool numeric_type(ParamType t) {
  return t == ParamType::Time || t == ParamType::Rate || t == ParamType::Bytes ||
         t == ParamType::Integer || t == ParamType::Probability || t == ParamType::Factor;
}

const char* unit_of(ParamType t) {
  switch (t) {
    case ParamType::Time:
      return "ps";
    case ParamType::Rate:
      return "bps";
    case ParamType::Bytes:
      return "B";
    default:
      return "";
  }
}

// A value as written in a scenario (text with a unit, a number, "1/8") in the type's unit.
double parse_value(const nlohmann::json& v, ParamType type, const std::string& where) {
  if (v.is_number()) {
    if (type == ParamType::Time || type == ParamType::Rate || type == ParamType::Bytes) {
      throw ScenarioError(where, "expected a quantity with its unit, found " + json_text(v));
    }
    return v.get<double>();
  }
  if (!v.is_string()) throw ScenarioError(where, "expected a number, found " + json_text(v));
  const std::string s = v.get<std::string>();
  try {
    switch (type) {
      case ParamType::Time:
        return static_cast<double>(parse_time(s).ps);
      case ParamType::Rate:
        return static_cast<double>(parse_rate(s).bps);
      case ParamType::Bytes:
        return static_cast<double>(parse_bytes(s).count);
      default:
        break;
    }
    const size_t slash = s.find('/');
    if (slash != std::string::npos) {
      return std::stod(s.substr(0, slash)) / std::stod(s.substr(slash + 1));
    }
    size_t used = 0;
    const double x = std::stod(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
    return x;
  } catch (const ScenarioError&) {
    throw;
  } catch (const std::exception& e) {
    throw ScenarioError(where, "expected a " + param_type_name(type) + ", found \"" + s + "\"");
  }
}

const Param* find_param(const std::string& path, const nlohmann::json& scenario,
                        const std::vector<const ParamGroup*>& groups) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return nullptr;
  const std::string prefix = path.substr(0, dot), key = path.substr(dot + 1);
  const std::string bare = strip_selectors(prefix, nullptr);
  const Param* fallback = nullptr;
  for (const ParamGroup* g : groups) {
    std::vector<std::string> selectors;
    if (strip_selectors(g->path, &selectors) != bare) continue;
    const auto p = std::find_if(g->params.begin(), g->params.end(),
                                [&](const Param& q) { return q.key == key; });
    if (p == g->params.end()) continue;
    // A selector "type=collective" must hold where the path points in the scenario.
    bool holds = true;
    for (const std::string& s : selectors) {
      const size_t eq = s.find('=');
      if (eq == std::string::npos) continue;
      const nlohmann::json* at = find_path(scenario, prefix + "." + s.substr(0, eq));
      holds = holds && at != nullptr && at->is_string() && *at == s.substr(eq + 1);
    }
    if (holds) return &*p;
    if (fallback == nullptr) fallback = &*p;
  }
  return fallback;
}

}  // namespace

double FitParameter::value(double u) const {
  u = std::clamp(u, 0.0, 1.0);
  return logarithmic ? lo * std::pow(hi / lo, u) : lo + (hi - lo) * u;
}

double FitParameter::coordinate(double v) const {
  if (hi <= lo) return 0;
  const double u = logarithmic ? std::log(v / lo) / std::log(hi / lo) : (v - lo) / (hi - lo);
  return std::clamp(u, 0.0, 1.0);
}

double FitParameter::rounded(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale =
      std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::abs(v)))));
  return std::round(v * scale) / scale;
}

nlohmann::json FitParameter::scenario_value(double v) const {
  switch (type) {
    case ParamType::Time:
      return format_time(Time{static_cast<int64_t>(std::llround(v))});
    case ParamType::Rate:
      return format_rate(BitsPerSec{static_cast<int64_t>(std::llround(v))});
    case ParamType::Bytes:
      return format_bytes(Bytes{static_cast<int64_t>(std::llround(v))});
    case ParamType::Integer:
      return static_cast<int64_t>(std::llround(v));
    default: {
      // Six significant digits: what a parameter file needs, and stable text.
      std::ostringstream s;
      s.precision(6);
      s << v;
      return std::stod(s.str());
    }
  }
}

std::string FitParameter::text(double v) const {
  const nlohmann::json j = scenario_value(v);
  return j.is_string() ? j.get<std::string>() : j.dump();
}

FitParameter parse_fit_parameter(const std::string& argument, const nlohmann::json& scenario,
                                 const std::vector<const ParamGroup*>& groups) {
  const std::string where = "--fit " + argument;
  const size_t eq = argument.find('=');
  FitParameter p;
  p.path = argument.substr(0, eq);
  const Param* declared = find_param(p.path, scenario, groups);
  if (declared == nullptr) {
    throw ScenarioError(
        where, "expected a declared parameter (see `fabtwin describe`), found \"" + p.path + "\"");
  }
  p.type = declared->type;
  // A quantity or a keyword ("auto") is declared as text: its range says which quantity.
  if (p.type == ParamType::Text && eq != std::string::npos) {
    const std::string lo = argument.substr(eq + 1, argument.find(':', eq) - eq - 1);
    const auto parses = [&](auto parse) {
      try {
        parse(lo);
        return true;
      } catch (const std::exception&) {
        return false;
      }
    };
    p.type = parses(parse_time)    ? ParamType::Time
             : parses(parse_rate)  ? ParamType::Rate
             : parses(parse_bytes) ? ParamType::Bytes
                                   : ParamType::Text;
  }
  if (!numeric_type(p.type)) {
    throw ScenarioError(where,
                        "expected a parameter with a numeric value (time, rate, size, "
                        "number), found one of type " +
                            param_type_name(declared->type) +
                            (declared->type == ParamType::Text
                                 ? " (one that also takes a quantity needs a range in its "
                                   "unit: PATH=LO:HI)"
                                 : ""));
  }
  p.unit = unit_of(p.type);
  p.help = declared->help;
  p.source = declared->source;
  const nlohmann::json* current = find_path(scenario, p.path);
  bool has_initial = false;
  // A keyword written out ("auto" where that is the default) is no number to start from.
  const bool keyword = current != nullptr && declared->type == ParamType::Text &&
                       current->is_string() &&
                       current->get<std::string>().find_first_of("0123456789") == std::string::npos;
  if (current != nullptr && !keyword) {
    p.initial = parse_value(*current, p.type, p.path);
    has_initial = true;
  } else {
    try {
      p.initial = parse_value(nlohmann::json::parse(declared->default_value), p.type, p.path);
      has_initial = true;
    } catch (const std::exception&) {
      // A keyword default ("auto"): the range must be given, and the fit starts in its middle.
    }
  }
  if (eq == std::string::npos) {
    if (!has_initial || p.initial <= 0) {
      throw ScenarioError(where, "expected a range PATH=LO:HI (the current value " +
                                     std::string(has_initial ? "is 0" : "is not a number") +
                                     ", so no default range is a quarter to four times it)");
    }
    p.lo = p.initial / 4;
    p.hi = p.initial * 4;
  } else {
    const std::string range = argument.substr(eq + 1);
    const size_t colon = range.find(':');
    if (colon == std::string::npos) {
      throw ScenarioError(where, "expected a range LO:HI after '=', found \"" + range + "\"");
    }
    const auto bound = [&](const std::string& text) {
      const nlohmann::json j = [&] {
        try {
          return nlohmann::json::parse(text);
        } catch (const std::exception&) {
          return nlohmann::json(text);
        }
      }();
      return parse_value(j, p.type, where);
    };
    p.lo = bound(range.substr(0, colon));
    p.hi = bound(range.substr(colon + 1));
  }
  if (!(p.lo < p.hi) || p.lo < 0) {
    throw ScenarioError(where, "expected a range LO:HI with 0 <= LO < HI, found " + p.text(p.lo) +
                                   ":" + p.text(p.hi));
  }
  if (!has_initial) {
    p.initial = p.lo > 0 ? std::sqrt(p.lo * p.hi) : (p.lo + p.hi) / 2;
    p.initial_from_range = true;
  }
  if (p.initial < p.lo || p.initial > p.hi) {
    throw ScenarioError(where, "the scenario's value " + p.text(p.initial) +
                                   " lies outside the range " + p.text(p.lo) + ":" + p.text(p.hi) +
                                   " (widen it, or set a value inside)");
  }
  p.logarithmic = p.lo > 0;
  return p;
}

}  // namespace fabtwin::calibration
