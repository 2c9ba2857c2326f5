#include "sim/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>

namespace fabtwin {
namespace fs = std::filesystem;

namespace {

// Temporary files being written, for the signal handler to remove: fixed slots, so that the
// handler touches no allocator and no lock.
constexpr size_t kSlots = 16;
constexpr size_t kPathBytes = 4096;
std::array<std::atomic<bool>, kSlots> slot_used{};
std::array<std::array<char, kPathBytes>, kSlots> slot_path{};

void remove_partials_and_reraise(int sig) {
  for (size_t i = 0; i < kSlots; ++i) {
    if (slot_used[i].load()) ::unlink(slot_path[i].data());
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Installed where the signal would kill the process as it stands; a handler someone else
// installed (or an ignored signal) is left alone.
void install_handlers() {
  static std::mutex installing;
  const std::lock_guard lock(installing);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler != SIG_DFL) continue;
    struct sigaction act {};
    act.sa_handler = remove_partials_and_reraise;
    ::sigemptyset(&act.sa_mask);
    ::sigaction(sig, &act, nullptr);
  }
}

// Registers a temporary file for the handler for as long as it lives.
class PartialFile {
 public:
  explicit PartialFile(const fs::path& path) : path_(path) {
    install_handlers();
    const std::string& text = path.native();
    if (text.size() >= kPathBytes) return;  // too long to register: removed on exceptions only
    for (size_t i = 0; i < kSlots; ++i) {
      bool expected = false;
      if (slot_used[i].load() || !slot_used[i].compare_exchange_strong(expected, true)) continue;
      std::memcpy(slot_path[i].data(), text.c_str(), text.size() + 1);
      slot_ = static_cast<int>(i);
      break;
    }
  }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;
  ~PartialFile() {
    std::error_code ignored;
    if (!kept_) fs::remove(path_, ignored);
    if (slot_ >= 0) slot_used[static_cast<size_t>(slot_)].store(false);
  }
  void keep() { kept_ = true; }  // renamed into place: nothing to remove

 private:
  fs::path path_;
  int slot_ = -1;
  bool kept_ = false;
};

std::string describe(fs::file_type type) {
  switch (type) {
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::character:
      return "a character device";
    case fs::file_type::block:
      return "a block device";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::directory:
      return "a directory";
    default:
      return "not a regular file";
  }
}

// The file a target names: a symbolic link's destination (followed to the end, even when it
// names a file not made yet), else itself.
fs::path destination(const fs::path& target) {
  fs::path file = target;
  std::error_code error;
  for (int hops = 0; hops < 40 && fs::is_symlink(file, error); ++hops) {
    const fs::path next = fs::read_symlink(file, error);
    if (error) break;
    file = next.is_absolute() ? next : file.parent_path() / next;
  }
  return file;
}

// Flushes `path` (a file or a folder) to the disk; a failure throws, naming `target`.
void sync(const fs::path& path, const fs::path& target) {
  const int fd = ::open(path.empty() ? "." : path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool done = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!done) {
    throw std::runtime_error("cannot flush " + target.string() + " to disk (" +
                             std::strerror(errno) + ")");
  }
}

bool written_in_place(fs::file_type type) {
  return type == fs::file_type::fifo || type == fs::file_type::character;
}

// Throws unless `file` (already resolved) may receive output of `kind`.
void check_type(const fs::path& file, const std::string& named, OutputKind kind) {
  std::error_code error;
  const fs::file_type type = fs::status(file, error).type();
  if (type == fs::file_type::not_found || type == fs::file_type::regular) return;
  if (type == fs::file_type::directory) {
    throw OutputPathError(named + ": expected a file name, found a directory");
  }
  if (written_in_place(type) && kind == OutputKind::Stream) return;
  throw OutputPathError(named + ": expected a regular file, found " + describe(type) +
                        (written_in_place(type) ? " (this file format needs a regular file)"
                                                : " (it is never written to or replaced)"));
}

// `.partial-<pid>` files beside `file` whose process is gone: what a killed run left.
void remove_debris(const fs::path& file) {
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  const std::string prefix = file.filename().string() + ".partial-";
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    if (fs::remove(it->path(), ignored)) {
      std::cerr << "fabtwin: removed " << it->path().string()
                << ", an unfinished file left by a run that was killed\n";
    }
  }
}

}  // namespace

fs::path partial_path(const fs::path& target) {
  return target.string() + ".partial-" + std::to_string(static_cast<long>(::getpid()));
}

void check_writable(const fs::path& target, const std::string& option, OutputKind kind) {
  const std::string named = option + " " + target.string();
  std::error_code error;
  if (target.empty() || !target.has_filename()) {
    throw OutputPathError(named + ": expected a file name, found a directory");
  }
  const fs::path file = destination(target);
  check_type(file, named, kind);
  if (written_in_place(fs::status(file, error).type())) {
    if (::access(file.c_str(), W_OK) != 0) {
      throw OutputPathError(named + ": cannot write to " + file.string() + " (" +
                            std::strerror(errno) + ")");
    }
    return;
  }
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  // create_directories says false, without an error, when another process made the folder
  // first: what counts is whether it is there afterwards.
  fs::create_directories(dir, error);
  if (!fs::is_directory(dir)) {
    throw OutputPathError(
        named + ": cannot create the folder " + dir.string() +
        (fs::exists(dir) ? " (something else is there)" : " (" + error.message() + ")"));
  }
  remove_debris(file);
  const fs::path probe = partial_path(file);
  const bool writable = static_cast<bool>(std::ofstream(probe));
  fs::remove(probe, error);
  if (!writable) throw OutputPathError(named + ": cannot write a file in " + dir.string());
}

void write_atomically(const fs::path& target, const std::function<void(const fs::path&)>& write,
                      OutputKind kind) {
  const fs::path file = destination(target);
  check_type(file, target.string(), kind);
  std::error_code error;
  if (written_in_place(fs::status(file, error).type())) {
    write(file);
    return;
  }
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  const fs::path temp = partial_path(file);
  PartialFile partial(temp);
  write(temp);
  // On the disk before the rename, and the rename itself after: a power loss leaves the old
  // file or the new one, never a renamed file whose data did not make it.
  sync(temp, target);
  fs::rename(temp, file);
  partial.keep();
  sync(file.has_parent_path() ? file.parent_path() : fs::path("."), target);
}

void write_text_atomically(const fs::path& target, const std::string& text) {
  write_atomically(
      target,
      [&](const fs::path& path) {
        std::ofstream out(path);
        out << text;
        out.close();
        if (!out) throw std::runtime_error("cannot write " + target.string());
      },
      OutputKind::Stream);
}

std::string new_run_id() {
  std::random_device device;
  std::uniform_int_distribution<uint64_t> any;
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx", static_cast<unsigned long long>(any(device)),
                static_cast<unsigned long long>(any(device)));
  return text;
}

}  // namespace fabtwin
