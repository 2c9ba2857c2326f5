// Result files that never lie. A regular file is written under a temporary name
// (`<target>.partial-<pid>`), flushed to the disk and renamed into place only when complete, so
// a crash, a kill or a power loss never leaves a truncated file that looks valid. A symbolic link
// is written through: the file it points to is replaced, the link stays. A FIFO or a character
// device (a pipe to another program, /dev/stdout) is written in place, never replaced by a regular
// file; a file format that must seek (HDF5) refuses them. Temporary files are removed on every exit
// path that runs code (an exception, SIGINT, SIGTERM, SIGHUP); one left by a killed process is
// recognised by its dead pid and removed by the next run that writes the same target.
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>

namespace fabtwin {

// An output file that cannot be written: the option that named it and what stands in the way.
struct OutputPathError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a result file's writer may do with its target.
enum class OutputKind {
  Seekable,  // a file format that needs a regular file (HDF5)
  Stream,    // text written front to back (JSON, trace): FIFOs and devices written through
};

// Checks, before a run, that `target` can be written as write_atomically will: not a directory,
// its folder creatable, a file creatable in it, and for Seekable output not a FIFO or a device.
// Removes the debris (`.partial-<pid>` of a dead pid) an earlier, killed run left beside it and
// says so on stderr. Throws OutputPathError naming `option`.
void check_writable(const std::filesystem::path& target, const std::string& option,
                    OutputKind kind = OutputKind::Stream);

// Writes `target` through `write`, which must fill the path it is given. Regular files and
// links go through a temporary file and a rename; FIFOs and devices (Stream only) are written
// in place. A failed write leaves the old target untouched and no temporary file behind.
void write_atomically(const std::filesystem::path& target,
                      const std::function<void(const std::filesystem::path&)>& write,
                      OutputKind kind = OutputKind::Seekable);

// A text file (JSON report, trace), written the same way.
void write_text_atomically(const std::filesystem::path& target, const std::string& text);

// The temporary name write_atomically uses for `target` in this process.
std::filesystem::path partial_path(const std::filesystem::path& target);

// A fresh identifier for one invocation's results (32 hex digits), written into each of its
// files so that files of different runs are never taken for one run's.
std::string new_run_id();

}  // namespace fabtwin
