// Loads a scenario document: JSON text, `extends` chains merged, `--set path=value` applied.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fabtwin {

struct ScenarioDocument {
  nlohmann::json root;         // merged document, `extends` removed
  std::filesystem::path file;  // the file named on the command line
  std::filesystem::path dir;   // its folder: relative paths inside resolve from here
};

// Reads `file`, follows `extends` (a path or a list of paths, relative to each file's folder,
// cycles refused), merges objects key by key (a list applies in order, later files win, and
// the extending file wins over all), then applies each "a.b[2].c=value" override.
// A value that parses as JSON is taken as JSON, otherwise as a string. Throws ScenarioError.
ScenarioDocument load_scenario(const std::filesystem::path& file,
                               const std::vector<std::string>& overrides = {});

// Reads one JSON file (a scenario, or a file a scenario names); errors name `path`, the key
// that named the file ("" for the scenario itself), and say where the JSON is invalid.
nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& path);

// The same for JSON text already in memory; `source` names it in errors (a file name).
nlohmann::json parse_json_text(const std::string& text, const std::string& source,
                               const std::string& path);

// Applies one override to a document (exposed for tests).
void apply_override(nlohmann::json& root, const std::string& assignment);

}  // namespace fabtwin
