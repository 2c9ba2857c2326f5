// What the tests share: Catch printing fabtwin quantities in failure messages, and scenarios
// written inline in a test.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "sim/scenario_file.h"
#include "sim/units.h"

namespace fabtwin::testing {
// `text` written to the file `name` in this test process's temporary folder.
inline std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("fabtwin-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path file = dir / name;
  std::ofstream(file) << text;
  return file;
}

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
