#include "validate/calibration/slice.h"

#include <cmath>
#include <sstream>

#include "sim/params.h"
#include "sim/units.h"

namespace fabtwin::calibration {
namespace {

const std::vector<std::string> kAttributes{"size",  "op",    "case",   "cc",
                                           "nodes", "ranks", "family", "metric"};
const std::vector<std::string> kOperators{"<=", ">=", "!=", "=", "<", ">"};

bool numeric_attribute(const std::string& a) {
  return a == "size" || a == "nodes" || a == "ranks";
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(' ');
  const size_t e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::string attribute_text(const Observation& o, const std::vector<Case>& cases,
                           const std::string& a) {
  const Case& c = cases.at(o.case_index);
  if (a == "size") {
    std::ostringstream s;
    s.precision(17);
    s << o.size;
    return s.str();
  }
  if (a == "op") return o.op;
  if (a == "case") return c.label;
  if (a == "cc") return c.cc;
  if (a == "nodes") return std::to_string(c.nodes);
  if (a == "ranks") return std::to_string(c.ranks);
  if (a == "family") return o.family;
  if (a == "metric") return o.metric;
  return "";
}

Slice Slice::parse(const std::string& text, const std::string& option) {
  Slice s;
  s.text_ = text;
  const std::string where = option + " " + text;
  std::stringstream in(text);
  std::string term;
  while (std::getline(in, term, ',')) {
    term = trim(term);
    Condition c;
    size_t at = std::string::npos;
    for (const std::string& op : kOperators) {
      at = term.find(op);
      if (at != std::string::npos) {
        c.op = op;
        break;
      }
    }
    if (at == std::string::npos || at == 0) {
      throw ScenarioError(where,
                          "expected conditions ATTRIBUTE OP VALUE joined by commas "
                          "(e.g. size<=64MiB,op=all_reduce), found \"" +
                              term + "\"");
    }
    c.attribute = trim(term.substr(0, at));
    c.value = trim(term.substr(at + c.op.size()));
    if (std::find(kAttributes.begin(), kAttributes.end(), c.attribute) == kAttributes.end()) {
      std::string known;
      for (const std::string& a : kAttributes) known += (known.empty() ? "" : ", ") + a;
      throw ScenarioError(
          where, "expected an attribute among " + known + ", found \"" + c.attribute + "\"");
    }
    if (numeric_attribute(c.attribute)) {
      try {
        if (c.attribute == "size" && c.value.find_first_not_of("0123456789") != std::string::npos) {
          c.number = static_cast<double>(parse_bytes(c.value).count);
        } else {
          size_t used = 0;
          c.number = std::stod(c.value, &used);
          if (used != c.value.size()) throw std::invalid_argument(c.value);
        }
        c.numeric = true;
      } catch (const std::exception&) {
        throw ScenarioError(
            where, "expected a number" +
                       std::string(c.attribute == "size" ? " or a size (64MiB)" : "") + " for " +
                       c.attribute + ", found \"" + c.value + "\"");
      }
    } else if (c.op != "=" && c.op != "!=") {
      throw ScenarioError(where,
                          "expected = or != for " + c.attribute + " (it is text), found " + c.op);
    }
    s.conditions_.push_back(c);
  }
  if (s.conditions_.empty()) throw ScenarioError(where, "expected at least one condition");
  return s;
}

bool Slice::matches(const Observation& o, const std::vector<Case>& cases) const {
  for (const Condition& c : conditions_) {
    const std::string v = attribute_text(o, cases, c.attribute);
    if (c.numeric) {
      const double x = std::stod(v);
      const bool ok = c.op == "="    ? x == c.number
                      : c.op == "!=" ? x != c.number
                      : c.op == "<"  ? x < c.number
                      : c.op == "<=" ? x <= c.number
                      : c.op == ">"  ? x > c.number
                                     : x >= c.number;
      if (!ok) return false;
    } else if ((c.op == "=") != (v == c.value)) {
      return false;
    }
  }
  return true;
}

}  // namespace fabtwin::calibration
