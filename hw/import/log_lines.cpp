#include "hw/import/log_lines.h"

#include <charconv>
#include <cmath>

namespace fabtwin::hw {

std::vector<LogLine> split_lines(std::string_view text) {
  std::vector<LogLine> lines;
  int number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({++number, std::string(line)});
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

void fail_at(const std::string& log, int line, const std::string& expected,
             std::string_view found) {
  std::string shown(trim(found));
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  const std::string what = shown.empty() ? "an empty line" : "'" + shown + "'";
  throw LogFormatError(log + ":" + std::to_string(line) + ": expected " + expected + ", found " +
                       what);
}

void fail_at_end(const std::string& log, int line, const std::string& expected) {
  throw LogFormatError(log + ":" + std::to_string(line) + ": expected " + expected +
                       ", found the end of the log");
}

std::optional<int64_t> to_integer(std::string_view s) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> to_number(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

}  // namespace fabtwin::hw
