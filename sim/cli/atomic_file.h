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

// An output file that cannot be written: the option that named it and what stands in the way.
struct OutputPathError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Checks, before a run, that `target` can be written as write_atomically will: not a directory,
// its folder creatable, a file creatable in it. Throws OutputPathError.
inline void check_writable(const std::filesystem::path& target, const std::string& option) {
  namespace fs = std::filesystem;
  const std::string named = option + " " + target.string();
  std::error_code error;
  if (target.empty() || fs::is_directory(target, error) || !target.has_filename()) {
    throw OutputPathError(named + ": expected a file name, found a directory");
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // create_directories says false, without an error, when another process made the folder
  // first: what counts is whether it is there afterwards.
  fs::create_directories(dir, error);
  if (!fs::is_directory(dir)) {
    throw OutputPathError(
        named + ": cannot create the folder " + dir.string() +
        (fs::exists(dir) ? " (something else is there)" : " (" + error.message() + ")"));
  }
  const fs::path probe =
      target.string() + ".partial-" + std::to_string(static_cast<long>(::getpid()));
  const bool writable = static_cast<bool>(std::ofstream(probe));
  fs::remove(probe, error);
  if (!writable) {
    throw OutputPathError(named + ": cannot write a file in " + dir.string());
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
