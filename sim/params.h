// Parameters declared beside their model (name, type, default, meaning, source) and a reader
// that takes them from a scenario section, checking units and naming the JSON path on error.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
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

// A section's parameters bound to the fields of the config struct they set, so that each
// parameter and its default are declared once: `read` fills a Config from a scenario section
// (declared defaults for absent keys) and `defaults()` is the Config of an empty section.
// A field is read by its parameter's type (a size into an integer field keeps its byte count);
// a parameter with a keyword, or checked against others, is read by code of its own.
template <typename Config>
class BoundParams {
 public:
  using Read = std::function<void(ParamReader&, Config&)>;
  struct Entry {
    Param param;
    Read read;
  };

  template <typename T>
  static Entry field(T Config::*member, Param param) {
    const std::string key = param.key;
    const ParamType type = param.type;
    return {std::move(param), [member, key, type](ParamReader& r, Config& c) {
              c.*member = read_as<T>(r, key, type);
            }};
  }
  static Entry custom(Param param, Read read) { return {std::move(param), std::move(read)}; }

  // `check` runs after every field is read (for rules across fields); it throws ScenarioError.
  BoundParams(std::string path, std::string model, std::string title, std::vector<Entry> entries,
              std::function<void(ParamReader&, const Config&)> check = {})
      : entries_(std::move(entries)), check_(std::move(check)) {
    group_.path = std::move(path);
    group_.model = std::move(model);
    group_.title = std::move(title);
    for (const Entry& e : entries_) group_.params.push_back(e.param);
  }

  const ParamGroup& group() const { return group_; }

  Config read(const nlohmann::json& section, const std::string& path) const {
    Config c{};
    read_into(section, path, c);
    return c;
  }
  // For a config that several sections fill (a switch's buffer, PFC, ECN and QoS).
  void read_into(const nlohmann::json& section, const std::string& path, Config& c) const {
    ParamReader r(section, path, group_);
    for (const Entry& e : entries_) e.read(r, c);
    if (check_) check_(r, c);
    r.finish();
  }
  Config read(const nlohmann::json& section) const { return read(section, group_.path); }
  Config defaults() const { return read(nlohmann::json()); }

 private:
  template <typename T>
  static T read_as(ParamReader& r, const std::string& key, ParamType type) {
    if constexpr (std::is_same_v<T, Time>) {
      return r.time(key);
    } else if constexpr (std::is_same_v<T, Bytes>) {
      return r.bytes(key);
    } else if constexpr (std::is_same_v<T, BitsPerSec>) {
      return r.rate(key);
    } else if constexpr (std::is_same_v<T, bool>) {
      return r.boolean(key);
    } else if constexpr (std::is_same_v<T, std::string>) {
      return type == ParamType::Choice ? r.choice(key) : r.text(key);
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(r.probability(key));
    } else {
      static_assert(std::is_integral_v<T>, "a bound field is a quantity, a flag, text or a number");
      return static_cast<T>(type == ParamType::Bytes ? r.bytes(key).count : r.integer(key));
    }
  }

  ParamGroup group_;
  std::vector<Entry> entries_;
  std::function<void(ParamReader&, const Config&)> check_;
};

}  // namespace fabtwin
