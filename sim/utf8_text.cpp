#include "sim/utf8_text.h"

#include <algorithm>

namespace fabtwin {

namespace {
constexpr int kUtf8Error = 316;  // nlohmann::json's type_error for invalid UTF-8 in a string
}

std::string utf8_problem(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return "";
  } catch (const nlohmann::json::type_error& e) {
    if (e.id != kUtf8Error) throw;
    const std::string what = e.what();  // "[json.exception.type_error.316] invalid UTF-8 ..."
    const size_t start = what.find("] ");
    return start == std::string::npos ? what : what.substr(start + 2);
  }
}

std::string valid_utf8(const std::string& text) {
  if (std::all_of(text.begin(), text.end(), [](char c) { return (c & 0x80) == 0; })) return text;
  const std::string quoted =
      nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(quoted).get<std::string>();
}

std::string_view utf8_prefix(std::string_view text, size_t bytes) {
  if (text.size() <= bytes) return text;
  size_t cut = bytes;
  // A continuation byte (10xxxxxx) at the cut belongs to a character that starts before it.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut);
}

std::string json_document(const nlohmann::json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace fabtwin
