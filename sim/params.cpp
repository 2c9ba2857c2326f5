#include "sim/params.h"

#include <algorithm>

namespace fabtwin {

namespace {
// j.dump(), but stopping once `out` holds `limit` characters: an error message quotes the start
// of a value, and a section of a large document must not be serialized whole to quote it.
void dump_prefix(const nlohmann::json& j, std::string& out, size_t limit) {
  if (out.size() >= limit) return;
  if (j.is_object()) {
    out += '{';
    bool first = true;
    for (auto it = j.begin(); it != j.end() && out.size() < limit; ++it, first = false) {
      if (!first) out += ',';
      out += nlohmann::json(it.key()).dump() + ':';
      dump_prefix(it.value(), out, limit);
    }
    out += '}';
  } else if (j.is_array()) {
    out += '[';
    bool first = true;
    for (auto it = j.begin(); it != j.end() && out.size() < limit; ++it, first = false) {
      if (!first) out += ',';
      dump_prefix(*it, out, limit);
    }
    out += ']';
  } else {
    out += j.dump();
  }
}
}  // namespace

std::string json_text(const nlohmann::json& j) {
  std::string s;
  dump_prefix(j, s, 81);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::string param_type_name(ParamType t) {
  switch (t) {
    case ParamType::Time:
      return "time";
    case ParamType::Bytes:
      return "size";
    case ParamType::Rate:
      return "rate";
    case ParamType::Integer:
      return "integer";
    case ParamType::Probability:
      return "probability";
    case ParamType::Factor:
      return "factor";
    case ParamType::Boolean:
      return "boolean";
    case ParamType::Choice:
      return "choice";
    case ParamType::Text:
      return "text";
    case ParamType::List:
      return "list";
  }
  return "?";
}

ParamReader::ParamReader(const nlohmann::json& section, std::string path, const ParamGroup& group)
    : section_(section), path_(std::move(path)), group_(group) {
  if (!section_.is_object() && !section_.is_null()) {
    throw ScenarioError(path_, "expected an object, found " + json_text(section_));
  }
}

std::string ParamReader::path_of(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

const Param& ParamReader::spec(const std::string& key) const {
  for (const Param& p : group_.params) {
    if (p.key == key) return p;
  }
  throw std::logic_error("parameter " + key + " is not declared in group " + group_.path);
}

bool ParamReader::has(const std::string& key) const {
  return section_.is_object() && section_.contains(key);
}

nlohmann::json ParamReader::value(const std::string& key) {
  const Param& p = spec(key);
  read_.insert(key);
  if (has(key)) return section_.at(key);
  if (p.default_value.empty()) throw ScenarioError(path_of(key), "required, but missing");
  auto parsed = nlohmann::json::parse(p.default_value, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json(p.default_value) : parsed;
}

namespace {
template <typename F>
auto parse_quantity(const nlohmann::json& v, const std::string& path, F parse) {
  if (!v.is_string()) {
    throw ScenarioError(path,
                        "expected a quantity written as text with its unit, found " + json_text(v));
  }
  try {
    return parse(v.get<std::string>());
  } catch (const UnitError& e) {
    throw ScenarioError(path, e.what());
  }
}
}  // namespace

Time ParamReader::time(const std::string& key) {
  return parse_quantity(value(key), path_of(key), parse_time);
}
Bytes ParamReader::bytes(const std::string& key) {
  return parse_quantity(value(key), path_of(key), parse_bytes);
}
BitsPerSec ParamReader::rate(const std::string& key) {
  return parse_quantity(value(key), path_of(key), parse_rate);
}

namespace {
template <typename Parse>
auto keyword_or(ParamReader& r, const std::string& key, const std::string& keyword, Parse parse)
    -> std::optional<decltype(parse(std::string_view{}))> {
  const std::string text = r.text(key);
  if (text == keyword) return std::nullopt;
  try {
    return parse(text);
  } catch (const UnitError& e) {
    std::string why = e.what();  // "expected a rate like ..., found ..."
    if (why.rfind("expected ", 0) == 0) why.erase(0, 9);
    throw ScenarioError(r.path_of(key), "expected \"" + keyword + "\" or " + why);
  }
}
}  // namespace

std::optional<Time> ParamReader::time_or(const std::string& key, const std::string& keyword) {
  return keyword_or(*this, key, keyword, parse_time);
}
std::optional<Bytes> ParamReader::bytes_or(const std::string& key, const std::string& keyword) {
  return keyword_or(*this, key, keyword, parse_bytes);
}
std::optional<BitsPerSec> ParamReader::rate_or(const std::string& key, const std::string& keyword) {
  return keyword_or(*this, key, keyword, parse_rate);
}

int64_t ParamReader::integer(const std::string& key) {
  const nlohmann::json v = value(key);
  if (!v.is_number_integer()) {
    throw ScenarioError(path_of(key), "expected an integer, found " + json_text(v));
  }
  const int64_t x = v.get<int64_t>();
  const std::string& range = spec(key).choices;
  if (const auto dots = range.find(".."); dots != std::string::npos) {
    const int64_t lo = std::stoll(range.substr(0, dots));
    const std::string hi_text = range.substr(dots + 2);
    if (x < lo || (!hi_text.empty() && x > std::stoll(hi_text))) {
      throw ScenarioError(path_of(key),
                          "expected an integer in " + range + ", found " + json_text(v));
    }
  }
  return x;
}

double ParamReader::probability(const std::string& key) {
  const nlohmann::json v = value(key);
  if (v.is_number()) {
    const double x = v.get<double>();
    if (x < 0 || x > 1) {
      throw ScenarioError(path_of(key),
                          "expected a probability between 0 and 1, found " + json_text(v));
    }
    return x;
  }
  return parse_quantity(v, path_of(key), parse_probability);
}

bool ParamReader::boolean(const std::string& key) {
  const nlohmann::json v = value(key);
  if (!v.is_boolean())
    throw ScenarioError(path_of(key), "expected true or false, found " + json_text(v));
  return v.get<bool>();
}

std::string ParamReader::choice(const std::string& key) {
  const nlohmann::json v = value(key);
  const std::string& options = spec(key).choices;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    size_t start = 0;
    while (start <= options.size()) {
      const size_t bar = std::min(options.find('|', start), options.size());
      if (options.compare(start, bar - start, s) == 0 && bar - start == s.size()) return s;
      start = bar + 1;
    }
  }
  std::string listed = options;
  std::replace(listed.begin(), listed.end(), '|', ',');
  throw ScenarioError(path_of(key), "expected one of " + listed + ", found " + json_text(v));
}

std::string ParamReader::text(const std::string& key) {
  const nlohmann::json v = value(key);
  if (!v.is_string()) throw ScenarioError(path_of(key), "expected a string, found " + json_text(v));
  return v.get<std::string>();
}

const nlohmann::json& ParamReader::raw(const std::string& key) {
  static const nlohmann::json null_value;
  spec(key);
  read_.insert(key);
  return has(key) ? section_.at(key) : null_value;
}

void ParamReader::finish() const {
  if (!section_.is_object()) return;
  for (const auto& [key, v] : section_.items()) {
    if (read_.count(key)) continue;
    std::string known;
    bool declared = false;
    for (const Param& p : group_.params) {
      declared |= p.key == key;
      known += (known.empty() ? "" : ", ") + p.key;
    }
    if (declared) {
      throw ScenarioError(
          path_of(key), "this key does not apply to this configuration, found " + json_text(v) +
                            " (if a file named by extends set it, remove it with \"" + key +
                            "\": null in the extending file, or --set " + path_of(key) + "=null)");
    }
    throw ScenarioError(path_of(key), "unknown key; this section takes: " + known);
  }
}

}  // namespace fabtwin
