// SHA-256 of bytes as hex (OpenSSL libcrypto): the hardware plan's run id, and the hash of a
// measurement file a calibration was fitted to.
#pragma once

#include <filesystem>
#include <string>

namespace fabtwin {

std::string sha256_hex(const std::string& bytes);
// Of a file's bytes; throws std::runtime_error naming the file when it cannot be read.
std::string file_sha256_hex(const std::filesystem::path& file);

}  // namespace fabtwin
