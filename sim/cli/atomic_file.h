// Writes a result file under a temporary name and renames it into place only when complete,
// so a crash or a kill never leaves a truncated file that looks valid.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

namespace fabtwin {

inline void write_atomically(const std::filesystem::path& target,
                             const std::function<void(const std::filesystem::path&)>& write) {
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  const std::filesystem::path temp =
      target.string() + ".partial-" + std::to_string(static_cast<long>(::getpid()));
  try {
    write(temp);
    std::filesystem::rename(temp, target);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temp, ignored);
    throw;
  }
}

// A text file (JSON report, trace), written the same way.
inline void write_text_atomically(const std::filesystem::path& target, const std::string& text) {
  write_atomically(target, [&](const std::filesystem::path& temp) {
    std::ofstream out(temp);
    out << text;
    out.close();
    if (!out) throw std::runtime_error("cannot write " + target.string());
  });
}

}  // namespace fabtwin
