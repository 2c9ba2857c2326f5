#include "sim/sweep/sweep_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "sim/atomic_file.h"
#include "sim/sweep/sweep_file.h"
#include "sim/utf8_text.h"

namespace fabtwin::sweep {

namespace {

std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "";
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

constexpr const char* kTempMark = ".partial-";

}  // namespace

bool SweepStore::open(const std::string& sweep_hash, const std::string& sweep_file,
                      ResumeMode mode) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(dir_ / "points", error);
  if (!fs::is_directory(dir_ / "points")) {
    throw SweepError("--out " + dir_.string() + ": cannot create the folder " +
                     (dir_ / "points").string() +
                     (error ? " (" + error.message() + ")" : " (something else is there)"));
  }
  if (lock_ < 0) lock_ = ::open((dir_ / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_ < 0 || ::flock(lock_, LOCK_EX | LOCK_NB) != 0) {
    throw SweepError("--out " + dir_.string() +
                     ": another fabtwin sweep is using this folder (it holds " +
                     (dir_ / "lock").string() + "); wait for it, or choose another --out");
  }
  // Debris of writes a kill interrupted: never complete, never read.
  for (const fs::path& folder : {dir_, dir_ / "points"}) {
    for (const fs::directory_entry& e : fs::directory_iterator(folder)) {
      if (e.path().filename().string().find(kTempMark) != std::string::npos) {
        fs::remove(e.path(), error);
      }
    }
  }
  const fs::path manifest = dir_ / "manifest.json";
  bool changed = false;
  if (fs::exists(manifest)) {
    const nlohmann::json m = nlohmann::json::parse(read_text(manifest), nullptr, false);
    const bool same = m.is_object() && m.value("sweep_hash", std::string()) == sweep_hash;
    if (!same) {
      changed = true;
      if (mode == ResumeMode::Refuse) {
        throw SweepError(
            "--out " + dir_.string() + " holds the results of a different sweep (" +
            (m.is_object() ? m.value("sweep_file", std::string("?")) : std::string("?")) +
            ", or this sweep file since changed): pass --resume=keep to reuse the stored points "
            "whose resolved scenario is unchanged, --restart to discard them, or another --out");
      }
    }
  }
  if (mode == ResumeMode::Restart) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir_ / "points")) {
      fs::remove(e.path(), error);
    }
    for (const char* name : {"table.csv", "table.h5"}) fs::remove(dir_ / name, error);
  }
  nlohmann::json m;
  m["sweep_hash"] = sweep_hash;
  m["sweep_file"] = sweep_file;
  write_text_atomically(manifest, json_document(m));
  return changed;
}

SweepStore::~SweepStore() {
  if (lock_ >= 0) ::close(lock_);  // releases the lock
}

std::filesystem::path SweepStore::record_path(const std::string& key) const {
  return dir_ / "points" / (key + ".json");
}

std::filesystem::path SweepStore::result_path(const std::string& key) const {
  return dir_ / "points" / (key + ".h5");
}

std::optional<nlohmann::json> SweepStore::load(const std::string& key) const {
  const std::string text = read_text(record_path(key));
  if (text.empty()) return std::nullopt;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("key", std::string()) != key || !j.contains("metrics") ||
      !j.contains("scenario") || !j.contains("fabtwin_version") ||
      !j["fabtwin_version"].is_string() ||
      run_key(j["fabtwin_version"].get<std::string>(), j["scenario"]) != key) {
    return std::nullopt;
  }
  return j;
}

void SweepStore::store(const std::string& key, const nlohmann::json& record) const {
  write_text_atomically(record_path(key), json_document(record, 1));
}

}  // namespace fabtwin::sweep
