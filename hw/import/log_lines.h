// A measurement log read line by line, for the importers of perftest and nccl-tests output: the
// lines with their numbers, whitespace-separated fields, strict number parsing, and the error
// that names the line, what was expected there and what was found.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fabtwin::hw {

// A log that does not read as the format it claims: "LOG:LINE: expected ..., found ...".
struct LogFormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct LogLine {
  int number = 0;    // 1-based
  std::string text;  // without the line end (a trailing '\r' removed)
};

// The lines of `text`, numbered from 1.
std::vector<LogLine> split_lines(std::string_view text);

// Whitespace-separated fields (spaces and tabs).
std::vector<std::string> fields_of(std::string_view line);

std::string_view trim(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);

// Throws LogFormatError: "<log>:<line>: expected <expected>, found '<found>'" (found shortened).
[[noreturn]] void fail_at(const std::string& log, int line, const std::string& expected,
                          std::string_view found);

// The same at the end of the log: "<log>:<line>: expected <expected>, found the end of the log".
[[noreturn]] void fail_at_end(const std::string& log, int line, const std::string& expected);

// A whole field as a number, or nothing: no sign where none belongs, no trailing characters.
std::optional<int64_t> to_integer(std::string_view s);
std::optional<double> to_number(std::string_view s);

}  // namespace fabtwin::hw
