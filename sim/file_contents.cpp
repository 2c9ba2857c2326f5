#include "sim/file_contents.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace fabtwin {

std::string file_contents(const std::filesystem::path& file, const std::string& what) {
  std::error_code error;
  if (std::filesystem::is_directory(file, error)) {
    // An ifstream opens a directory and reads nothing from it: an empty file, to the parsers.
    throw std::runtime_error("expected a " + what + ", found a directory at " + file.string());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read the " + what + " " + file.string());
  std::ostringstream text;
  text << in.rdbuf();  // an empty file sets `text`'s failbit, and is no error
  return text.str();
}

}  // namespace fabtwin
