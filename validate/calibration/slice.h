// A slice of the observations: `size<=64MiB`, `op=all_reduce,case=2nodes` (conditions joined by
// commas must all hold). A calibration is fitted on one slice and validated on another, and its
// errors are reported per slice.
#pragma once

#include <string>
#include <vector>

#include "validate/calibration/observations.h"

namespace fabtwin::calibration {

class Slice {
 public:
  // Attributes: size (bytes; a value may carry a unit: 64MiB), op (collective or perftest
  // test, "flow" for flows), case, cc, nodes, ranks, family, metric. Operators: = != < <= > >=
  // (the ordering ones on numbers only). Throws ScenarioError naming `option` on a bad one.
  static Slice parse(const std::string& text, const std::string& option);
  static Slice everything() { return {}; }

  bool matches(const Observation& o, const std::vector<Case>& cases) const;
  const std::string& text() const { return text_; }
  bool empty() const { return conditions_.empty(); }

 private:
  struct Condition {
    std::string attribute, op, value;
    double number = 0;
    bool numeric = false;
  };
  std::vector<Condition> conditions_;
  std::string text_;
};

// The value of an attribute of an observation, as text, and as a number where it is one.
std::string attribute_text(const Observation& o, const std::vector<Case>& cases,
                           const std::string& attribute);

}  // namespace fabtwin::calibration
