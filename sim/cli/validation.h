// `fabtwin validate`: runs the cases in validate/ and compares each metric to its reference.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fabtwin {

struct ValidationOutcome {
  std::string name;
  std::string metric;
  double reference = 0;
  double simulated = 0;
  double error = 0;  // relative unless the case's tolerance is absolute
  double tolerance = 0;
  bool relative = true;
  std::string bound;  // "at_most" / "at_least": one-sided, else two-sided
  bool passed = false;
  std::string source;
  std::vector<std::pair<std::string, double>> extras;  // also measured, not judged
};

// Runs one case file (JSON: name, scenario, set, metric, reference, tolerance).
ValidationOutcome run_validation_case(const std::filesystem::path& case_file);

// `fabtwin validate [CASE...]`: CASE is a case name in validate/ or a path; none = all.
int command_validate(const std::vector<std::string>& args);

}  // namespace fabtwin
