#include "sim/sha256.h"

#include <openssl/evp.h>

#include <stdexcept>

#include "sim/file_contents.h"

namespace fabtwin {

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::string file_sha256_hex(const std::filesystem::path& file) {
  return sha256_hex(file_contents(file, "file"));
}

}  // namespace fabtwin
