// Parameters declared beside their model (name, type, default, meaning, source) and a reader
// that takes them from a scenario section, checking units and naming the JSON path on error.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/units.h"

namespace fabtwin {

enum class ParamType {
  Time,
  Bytes,
  Rate,
  Integer,
  Probability,
  Factor,
  Boolean,
  Choice,
  Text,
  List
};

struct Param {
  std::string key;
  ParamType type;
  std::string default_value;  // as written in a scenario file; empty = required
  std::string help;           // meaning
  std::string source;         // where the default comes from
  std::string choices = {};   // Choice: "a|b|c"; Integer: "min..max"
};

// One section of a scenario (`fabric.link`, `nic`, a traffic generator type, ...).
struct ParamGroup {
  std::string path;   // e.g. "fabric.link" or "traffic[type=incast]"
  std::string model;  // name `fabtwin describe MODEL` answers to
  std::string title;
  std::vector<Param> params;
};

// A scenario mistake: the JSON path, what was expected and what was found.
class ScenarioError : public std::runtime_error {
 public:
  ScenarioError(const std::string& path, const std::string& what)
      : std::runtime_error("scenario error at " + (path.empty() ? "(top level)" : path) + ": " +
                           what) {}
};

std::string json_text(const nlohmann::json& j);  // compact text of a JSON value for messages

// Reads the parameters of one group from a JSON object; every read returns the declared
// default when the key is absent. `finish()` rejects keys the group does not declare.
class ParamReader {
 public:
  ParamReader(const nlohmann::json& section, std::string path, const ParamGroup& group);

  Time time(const std::string& key);
  Bytes bytes(const std::string& key);
  BitsPerSec rate(const std::string& key);
  // A quantity, or `keyword` ("auto", "line"): nullopt when the keyword was written.
  std::optional<Time> time_or(const std::string& key, const std::string& keyword);
  std::optional<Bytes> bytes_or(const std::string& key, const std::string& keyword);
  std::optional<BitsPerSec> rate_or(const std::string& key, const std::string& keyword);
  int64_t integer(const std::string& key);
  double probability(const std::string& key);
  bool boolean(const std::string& key);
  std::string choice(const std::string& key);
  std::string text(const std::string& key);
  bool has(const std::string& key) const;
  // The raw JSON value (for lists and nested objects), marked as read; null when absent.
  const nlohmann::json& raw(const std::string& key);
  // The JSON value, or the declared default parsed as JSON when absent; marked as read.
  nlohmann::json json(const std::string& key) { return value(key); }
  std::string path_of(const std::string& key) const;
  const std::string& path() const { return path_; }

  void finish() const;

 private:
  const Param& spec(const std::string& key) const;
  // The value as written, or the default parsed as JSON text; marks the key as read.
  nlohmann::json value(const std::string& key);

  const nlohmann::json& section_;
  std::string path_;
  const ParamGroup& group_;
  std::set<std::string> read_;
};

std::string param_type_name(ParamType t);

}  // namespace fabtwin
