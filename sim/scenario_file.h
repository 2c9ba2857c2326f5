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

// Applies one override to a document (`--set`, and every point of a sweep).
void apply_override(nlohmann::json& root, const std::string& assignment);

// One step of a path such as "traffic[1].load": an object key, or (key empty) an array index;
// `walked` is the path up to and including this step.
struct PathStep {
  std::string key;
  size_t index = 0;
  std::string walked;
};
// Splits a path as `--set` reads it; throws ScenarioError on a malformed one.
std::vector<PathStep> split_path(const std::string& path);
// The value at `path` in `root`, or null when the path names nothing there.
const nlohmann::json* find_path(const nlohmann::json& root, const std::string& path);

}  // namespace fabtwin
