// Text in the outputs is UTF-8, as JSON (RFC 8259) and the HDF5 attributes' declared character
// set require. Some of it comes from outside as raw bytes: a file name (Linux allows any byte but
// '/' and NUL), a line of a tool's log, an attribute of a foreign HDF5 file. The JSON library
// refuses to write invalid UTF-8, so one such byte would stop a writer after the run. Scenario
// input is refused instead (utf8_problem); recorded names and log text are repaired where they are
// written (valid_utf8, json_document), each invalid byte shown as U+FFFD, the replacement
// character.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace fabtwin {

// "" when `text` is valid UTF-8; otherwise what is wrong, as "invalid UTF-8 byte at index 12:
// 0xAB" or "incomplete UTF-8 string; last byte: 0x82" (the JSON library's check and words).
std::string utf8_problem(const std::string& text);

// `text` with each invalid byte replaced by U+FFFD; valid UTF-8 is returned unchanged.
std::string valid_utf8(const std::string& text);

// The longest prefix of `text` of at most `bytes` bytes that does not cut a character in two.
std::string_view utf8_prefix(std::string_view text, size_t bytes);

// A JSON document as written to a file or printed: `indent` spaces per level (-1: one line), any
// invalid UTF-8 in its strings replaced by U+FFFD, and a final newline.
std::string json_document(const nlohmann::json& document, int indent = 2);

}  // namespace fabtwin
