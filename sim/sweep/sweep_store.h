// The resume store of a sweep's output folder: a manifest that names the sweep file (by the hash
// of its bytes and of the command's own overrides) and one JSON record per finished point and
// seed, `points/<key>.json`, keyed by the hash of the point's resolved scenario text. Records are
// written to a temporary name, flushed to disk (fsync) and renamed into place, so a record under
// its final name is always complete; one that does not parse is taken as not finished.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fabtwin::sweep {

enum class ResumeMode {
  Refuse,   // a folder started by another sweep file is an error (the default)
  Keep,     // reuse the records whose key the new sweep still has (--resume=keep)
  Restart,  // discard every record (--restart)
};

class SweepStore {
 public:
  explicit SweepStore(std::filesystem::path dir) : dir_(std::move(dir)) {}
  ~SweepStore();
  SweepStore(const SweepStore&) = delete;
  SweepStore& operator=(const SweepStore&) = delete;

  // Creates the folder and checks the manifest against `sweep_hash`: a new folder gets a
  // manifest; one of another sweep is refused (SweepError) or, as `mode` says, kept or emptied.
  // Removes temporary files of interrupted writes. Call once, before any worker stores. Holds
  // an exclusive lock on DIR/lock until destroyed (or the process dies, even by kill -9): a
  // second sweep on the same folder at the same time is refused.
  // Returns true when the manifest was of another sweep (and `mode` allowed going on).
  bool open(const std::string& sweep_hash, const std::string& sweep_file, ResumeMode mode);

  // The finished record of `key`, or nullopt (absent, or not a complete record of that key:
  // unparsable, another key, or a scenario whose hash is not the key).
  std::optional<nlohmann::json> load(const std::string& key) const;
  // Stores `record` (which holds "key") atomically and durably. Thread-safe for distinct keys.
  void store(const std::string& key, const nlohmann::json& record) const;

  std::filesystem::path record_path(const std::string& key) const;
  std::filesystem::path result_path(const std::string& key) const;  // points/<key>.h5
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  int lock_ = -1;
};

}  // namespace fabtwin::sweep
