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
// This test process's temporary folder: made on first use, removed with what is in it when the
// process exits (by the process that made it, not by a child forked from it).
inline const std::filesystem::path& temp_dir() {
  struct Folder {
    pid_t owner = ::getpid();
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("fabtwin-test-" + std::to_string(owner));
    Folder() { std::filesystem::create_directories(path); }
    ~Folder() {
      std::error_code ignored;
      if (::getpid() == owner) std::filesystem::remove_all(path, ignored);
    }
  };
  static const Folder folder;
  return folder.path;
}

// `text` written to the file `name` in this test process's temporary folder.
inline std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path file = temp_dir() / name;
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
