#include "hw/observe/sysfs_file.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <system_error>

namespace fabtwin::hw {

namespace fs = std::filesystem;

std::optional<std::string> read_attribute(const fs::path& file) {
  std::ifstream in(file, std::ios::in | std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return std::nullopt;
  std::string s = text.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

std::optional<uint64_t> read_unsigned(const fs::path& file) {
  const std::optional<std::string> text = read_attribute(file);
  if (!text || text->empty()) return std::nullopt;
  std::string_view t = *text;
  int base = 10;
  if (t.starts_with("0x")) {
    t.remove_prefix(2);
    base = 16;
  }
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value, base);
  if (ec != std::errc{} || end != t.data() + t.size()) return std::nullopt;
  return value;
}

std::vector<std::string> attribute_files(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec),
       end;
       !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec))
      files.push_back(it->path().lexically_relative(dir).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> entry_names(const fs::path& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace fabtwin::hw
