#include "sim/scenario_file.h"

#include <algorithm>

#include "sim/file_contents.h"
#include "sim/params.h"
#include "sim/utf8_text.h"

namespace fabtwin {
namespace {

// Scenarios are a few levels deep; the JSON library parses (and prints) recursively, so a
// document nested thousands of levels deep would overflow the stack. Refuse it first.
constexpr int kMaxNesting = 64;

// The line of the first place `text` nests deeper than kMaxNesting, or 0 when it does not.
size_t too_deep_at(const std::string& text) {
  int depth = 0;
  size_t line = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') ++line;
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxNesting) return line;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return 0;
}

std::string nesting_error(size_t line) {
  return "expected JSON nested at most " + std::to_string(kMaxNesting) +
         " levels deep, found deeper at line " + std::to_string(line);
}

}  // namespace

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& path) {
  std::string text;
  try {
    text = file_contents(file, "JSON file");
  } catch (const std::runtime_error& e) {
    throw ScenarioError(path, e.what());
  }
  return parse_json_text(text, file.string(), path);
}

nlohmann::json parse_json_text(const std::string& text, const std::string& source,
                               const std::string& path) {
  if (const size_t line = too_deep_at(text)) {
    throw ScenarioError(path, source + ": " + nesting_error(line));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw ScenarioError(path, source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                                  ": not valid JSON (" + e.what() + ")");
  } catch (const nlohmann::json::out_of_range& e) {
    // A number beyond a double (1e400): the library names the number but not its place.
    throw ScenarioError(path, source + ": not valid JSON (" + e.what() + ")");
  }
}

namespace {

// JSON Merge Patch (RFC 7386) with arrays replaced whole: objects merge key by key, and null
// removes the key, which is how an extending file drops what its base set.
void merge_into(nlohmann::json& base, const nlohmann::json& over) {
  for (const auto& [key, value] : over.items()) {
    if (value.is_null()) {
      base.erase(key);
    } else if (value.is_object()) {  // into an empty object where there is none: nulls go
      if (!base.contains(key) || !base[key].is_object()) base[key] = nlohmann::json::object();
      merge_into(base[key], value);
    } else {
      base[key] = value;
    }
  }
}

// `named_by`: the key that named `file` ("extends[i]"), "" for the scenario itself.
nlohmann::json load_with_extends(const std::filesystem::path& file,
                                 std::vector<std::filesystem::path>& chain,
                                 const std::string& named_by) {
  const auto canonical = std::filesystem::weakly_canonical(file);
  for (const auto& seen : chain) {
    if (seen == canonical) {
      throw ScenarioError("extends",
                          "the files extend each other in a cycle through " + file.string());
    }
  }
  chain.push_back(canonical);
  nlohmann::json doc = read_json_file(file, named_by);
  if (!doc.is_object()) {
    throw ScenarioError("", file.string() + ": expected a JSON object, found " + json_text(doc));
  }
  if (!doc.contains("extends")) {
    nlohmann::json plain = nlohmann::json::object();
    merge_into(plain, doc);  // the same null rule as in an extending file
    return plain;
  }
  nlohmann::json ext = doc["extends"];
  doc.erase("extends");
  if (ext.is_string()) ext = nlohmann::json::array({ext});
  if (!ext.is_array() || ext.empty()) {
    throw ScenarioError(
        "extends",
        "expected the path of another scenario file, or a list of them, found " + json_text(ext));
  }
  // Bases apply in order, each over the ones before it; the extending file wins over all.
  nlohmann::json merged = nlohmann::json::object();
  for (size_t i = 0; i < ext.size(); ++i) {
    if (!ext[i].is_string()) {
      throw ScenarioError("extends[" + std::to_string(i) + "]",
                          "expected the path of another scenario file, found " + json_text(ext[i]));
    }
    std::vector<std::filesystem::path> branch = chain;
    merge_into(merged, load_with_extends(file.parent_path() / ext[i].get<std::string>(), branch,
                                         "extends[" + std::to_string(i) + "]"));
  }
  merge_into(merged, doc);
  return merged;
}

}  // namespace

std::vector<PathStep> split_path(const std::string& path) {
  std::vector<PathStep> steps;
  std::string walked;
  size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) throw ScenarioError(path, "unclosed [ in the path");
      const std::string index_text = path.substr(i + 1, close - i - 1);
      // Decimal digits only: std::stoul would read "0x1" or " 1" as a number and ignore the rest.
      const bool digits = !index_text.empty() && index_text.size() <= 9 &&
                          std::all_of(index_text.begin(), index_text.end(),
                                      [](char c) { return c >= '0' && c <= '9'; });
      if (!digits) {
        throw ScenarioError(path, "expected an array index in [], found \"" + index_text + "\"");
      }
      walked += "[" + index_text + "]";
      steps.push_back({"", std::stoul(index_text), walked});
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    const size_t end = path.find_first_of(".[", i);
    const std::string key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (key.empty()) throw ScenarioError(path, "empty key in the path");
    walked += (walked.empty() ? "" : ".") + key;
    steps.push_back({key, 0, walked});
    i = end == std::string::npos ? path.size() : end;
    if (i < path.size() && path[i] == '.') ++i;
  }
  return steps;
}

const nlohmann::json* find_path(const nlohmann::json& root, const std::string& path) {
  const nlohmann::json* node = &root;
  for (const PathStep& step : split_path(path)) {
    if (step.key.empty()) {
      if (!node->is_array() || step.index >= node->size()) return nullptr;
      node = &(*node)[step.index];
    } else {
      if (!node->is_object() || !node->contains(step.key)) return nullptr;
      node = &(*node)[step.key];
    }
  }
  return node;
}

void apply_override(nlohmann::json& root, const std::string& assignment) {
  // JSON text is UTF-8: a key or a string value in any other encoding could not be written out.
  if (const std::string problem = utf8_problem(assignment); !problem.empty()) {
    throw ScenarioError("--set", "expected UTF-8 text, found an " + problem);
  }
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw ScenarioError("--set", "expected path=value, found \"" + assignment + "\"");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  if (const size_t line = too_deep_at(text))
    throw ScenarioError("--set " + path, nesting_error(line));
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  if (value.is_object()) {  // nulls inside remove nothing here: they are dropped
    nlohmann::json plain = nlohmann::json::object();
    merge_into(plain, value);
    value = std::move(plain);
  }

  nlohmann::json* node = &root;
  nlohmann::json* parent = nullptr;
  std::string last_key;  // the key `node` is under in `parent`; empty after an array index
  for (const PathStep& step : split_path(path)) {
    if (step.key.empty()) {
      if (!node->is_array() || step.index >= node->size()) {
        throw ScenarioError(step.walked, "--set names an array element that does not exist");
      }
      parent = nullptr;
      node = &(*node)[step.index];
      continue;
    }
    if (node->is_null()) *node = nlohmann::json::object();
    if (!node->is_object()) {
      throw ScenarioError(step.walked, "--set path goes through something that is not an object");
    }
    parent = node;
    last_key = step.key;
    node = &(*node)[step.key];
  }
  if (value.is_null() && parent != nullptr) {
    parent->erase(last_key);  // `path=null` removes the key, as null does in an extending file
  } else {
    *node = value;
  }
}

ScenarioDocument load_scenario(const std::filesystem::path& file,
                               const std::vector<std::string>& overrides) {
  std::vector<std::filesystem::path> chain;
  ScenarioDocument doc;
  doc.root = load_with_extends(file, chain, "");
  for (const std::string& o : overrides) apply_override(doc.root, o);
  doc.file = file;
  doc.dir = file.parent_path();
  return doc;
}

}  // namespace fabtwin
