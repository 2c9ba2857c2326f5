// The job token: the shared secret every process of one `fabtwin-hw` job holds, from which the
// control network derives its keys (secure_channel.h). It never appears on a command line (where
// `ps` and shell histories show it): it is read from a file of its own (mode 0600) named by an
// option or by FABTWIN_HW_TOKEN_FILE, or from FABTWIN_HW_TOKEN (hex). Only its fingerprint, the
// first 8 hex digits of its SHA-256, is ever printed.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fabtwin::hw {

// A token that cannot be read or is unfit: names the file or variable and what is wrong.
class TokenError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr size_t kMinTokenBytes = 32;
inline constexpr size_t kNewTokenBytes = 32;
inline constexpr const char* kTokenFileVariable = "FABTWIN_HW_TOKEN_FILE";
inline constexpr const char* kTokenHexVariable = "FABTWIN_HW_TOKEN";

struct JobToken {
  std::vector<unsigned char> bytes;
  std::string source;  // where it came from ("file /path", "environment FABTWIN_HW_TOKEN")
  std::string fingerprint() const;
};

// The first 8 hex digits of SHA-256(token): what logs may show of a token.
std::string token_fingerprint(const std::vector<unsigned char>& token);

// A token file: a regular file, not readable or writable by group or others (mode & 077 == 0),
// holding the token as hex digits (what write_new_token_file writes; surrounding whitespace
// ignored) or, when it is not hex, as raw bytes; at least kMinTokenBytes bytes either way.
JobToken read_token_file(const std::filesystem::path& path);

// A token given as hex digits (FABTWIN_HW_TOKEN); `source` names it in errors.
JobToken token_from_hex(std::string_view hex, const std::string& source);

// The job's token: the file `token_file` when it is not empty (a `--token-file PATH` option),
// else the file named by FABTWIN_HW_TOKEN_FILE, else FABTWIN_HW_TOKEN; TokenError naming all
// three when none is set.
JobToken load_job_token(const std::string& token_file = {});

// Creates a new random token (kNewTokenBytes from getrandom) in `path` as hex, mode 0600,
// written atomically (the file appears complete or not at all). Refuses to replace an existing
// file unless `replace`. Returns the token (print only its fingerprint).
JobToken write_new_token_file(const std::filesystem::path& path, bool replace = false);

}  // namespace fabtwin::hw
