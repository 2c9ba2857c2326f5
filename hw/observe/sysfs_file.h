// Reading sysfs (and debugfs) attribute files, read-only: the only way the observers touch
// them. There is no write path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace fabtwin::hw {

// The file's text without its trailing newline and blanks; nullopt when it cannot be opened or
// read (missing, a permission refused, an attribute whose read fails in the driver).
std::optional<std::string> read_attribute(const std::filesystem::path& file);

// The attribute as an unsigned integer (decimal, or 0x hexadecimal); nullopt when unreadable or
// not a number.
std::optional<uint64_t> read_unsigned(const std::filesystem::path& file);

// The regular files under `dir`, recursively, as paths relative to it in sorted order (sysfs
// directory order is not stable across kernels). Empty when `dir` is missing.
std::vector<std::string> attribute_files(const std::filesystem::path& dir);

// The names of the entries of `dir` in sorted order; empty when it is missing.
std::vector<std::string> entry_names(const std::filesystem::path& dir);

}  // namespace fabtwin::hw
