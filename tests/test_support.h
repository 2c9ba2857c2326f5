// What the tests share: Catch printing fabtwin quantities in failure messages, and scenarios
// written inline in a test.
#pragma once

#include <catch2/catch.hpp>
#include <filesystem>

#include "sim/scenario_file.h"
#include "sim/units.h"

namespace fabtwin::testing {
// A scenario given as JSON in a test, as if read from inline.json in `dir`.
inline ScenarioDocument inline_document(const nlohmann::json& scenario,
                                        const std::filesystem::path& dir = ".") {
  ScenarioDocument doc;
  doc.root = scenario;
  doc.file = "inline.json";
  doc.dir = dir;
  return doc;
}
}  // namespace fabtwin::testing

namespace Catch {
template <>
struct StringMaker<fabtwin::Time> {
  static std::string convert(fabtwin::Time t) { return std::to_string(t.ps) + " ps"; }
};
}  // namespace Catch
