// Writes a result file under a temporary name and renames it into place only when complete,
// so a crash or a kill never leaves a truncated file that looks valid.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <functional>
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

}  // namespace fabtwin
