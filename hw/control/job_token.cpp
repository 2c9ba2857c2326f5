#include "hw/control/job_token.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "sim/atomic_file.h"

namespace fabtwin::hw {

namespace {

std::string to_hex(const unsigned char* data, size_t n) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xF];
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// The bytes of `hex`, or nothing when it is not an even number of hex digits.
std::optional<std::vector<unsigned char>> decode_hex(std::string_view hex) {
  if (hex.empty() || hex.size() % 2 != 0) return std::nullopt;
  std::vector<unsigned char> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return out;
}

void check_length(const JobToken& token) {
  if (token.bytes.size() < kMinTokenBytes)
    throw TokenError("job token from " + token.source + ": " + std::to_string(token.bytes.size()) +
                     " bytes, expected at least " + std::to_string(kMinTokenBytes) +
                     " (create one with `fabtwin-hw token --out FILE`)");
}

std::string errno_text(int error) {
  return std::strerror(error);
}

}  // namespace

std::string token_fingerprint(const std::vector<unsigned char>& token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(token.data(), token.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw TokenError("SHA-256 of the job token failed (OpenSSL)");
  return to_hex(digest, 4);
}

std::string JobToken::fingerprint() const {
  return token_fingerprint(bytes);
}

JobToken read_token_file(const std::filesystem::path& path) {
  const std::string name = "token file " + path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw TokenError(name + ": cannot be opened: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw TokenError(name + ": cannot be examined: " + errno_text(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw TokenError(name + ": not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw TokenError(name + ": mode " + mode +
                     " lets group or others access it; expected no group/other permission "
                     "(chmod 600 " +
                     path.string() + ")");
  }
  std::string content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw TokenError(name + ": cannot be read: " + errno_text(error));
    }
    if (n == 0) break;
    content.append(buffer, static_cast<size_t>(n));
    if (content.size() > 1 << 16) {
      ::close(fd);
      throw TokenError(name + ": larger than 64 KiB, not a token");
    }
  }
  ::close(fd);
  JobToken token;
  token.source = name;
  if (auto bytes = decode_hex(trimmed(content)))
    token.bytes = std::move(*bytes);
  else
    token.bytes.assign(content.begin(), content.end());
  check_length(token);
  return token;
}

JobToken token_from_hex(std::string_view hex, const std::string& source) {
  auto bytes = decode_hex(trimmed(hex));
  if (!bytes) throw TokenError("job token from " + source + ": not an even number of hex digits");
  JobToken token{std::move(*bytes), source};
  check_length(token);
  return token;
}

JobToken load_job_token(const std::string& token_file) {
  if (!token_file.empty()) return read_token_file(token_file);
  if (const char* file = std::getenv(kTokenFileVariable); file && *file)
    return read_token_file(file);
  if (const char* hex = std::getenv(kTokenHexVariable); hex && *hex)
    return token_from_hex(hex, std::string("environment variable ") + kTokenHexVariable);
  throw TokenError(std::string("no job token: give --token-file PATH, or set ") +
                   kTokenFileVariable + " (a file of mode 0600) or " + kTokenHexVariable +
                   " (hex); create one with `fabtwin-hw token --out FILE`");
}

JobToken write_new_token_file(const std::filesystem::path& path, bool replace) {
  std::error_code ec;
  if (!replace &&
      std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found)
    throw TokenError("token file " + path.string() + ": exists already; not replaced");
  JobToken token;
  token.source = "token file " + path.string();
  token.bytes.resize(kNewTokenBytes);
  size_t filled = 0;
  while (filled < token.bytes.size()) {
    const ssize_t n = ::getrandom(token.bytes.data() + filled, token.bytes.size() - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw TokenError("getrandom failed: " + errno_text(errno));
    filled += static_cast<size_t>(n);
  }
  const std::string text = to_hex(token.bytes.data(), token.bytes.size()) + "\n";
  write_atomically(path, [&](const std::filesystem::path& partial) {
    const int fd =
        ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw TokenError("token file " + path.string() + ": " + errno_text(errno));
    // The umask may only have removed bits; make the mode exactly 0600.
    bool ok = ::fchmod(fd, 0600) == 0;
    size_t written = 0;
    while (ok && written < text.size()) {
      const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      if (ok) written += static_cast<size_t>(n);
    }
    ok = ok && ::fsync(fd) == 0;
    const int error = errno;
    ::close(fd);
    if (!ok) throw TokenError("token file " + path.string() + ": " + errno_text(error));
  });
  return token;
}

}  // namespace fabtwin::hw
