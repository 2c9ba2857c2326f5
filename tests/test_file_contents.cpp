// Files a user names (scenarios, flow-size CDFs, logs, hosts files, sweep files) are read by one
// function, which tells a directory and a missing file apart from an empty file: an ifstream
// opens a directory and reads nothing, so a log or hosts file that was a directory used to be
// refused as if it were empty ("found the end of the log", "no `ADDRESS HOSTS` line").
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw/run/host_mapping.h"
#include "sim/file_contents.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

TEST_CASE("a file is read whole, byte for byte, and an empty one is empty", "[file_contents]") {
  const std::string bytes("a\0b\xFF\r\n", 6);
  const fs::path file = testing::write_temp("bytes.bin", bytes);
  CHECK(file_contents(file, "log") == bytes);
  CHECK(file_contents(testing::write_temp("empty.log", ""), "log").empty());
}

TEST_CASE("a directory or a missing file is refused, naming the kind of file and its path",
          "[file_contents]") {
  const fs::path dir = testing::temp_dir() / "a_directory";
  fs::create_directories(dir);
  CHECK_THROWS_WITH(file_contents(dir, "log"),
                    "expected a log, found a directory at " + dir.string());
  const fs::path missing = testing::temp_dir() / "missing.json";
  fs::remove(missing);
  CHECK_THROWS_WITH(file_contents(missing, "JSON file"),
                    "cannot read the JSON file " + missing.string());

  // The readers that opened files themselves and took a directory for an empty file.
  CHECK_THROWS_WITH(hw::read_hosts_file(dir.string(), 4),
                    "expected a hosts file, found a directory at " + dir.string() + " (hw.hosts)");
  const std::string import = std::string(FABTWIN_BINARY) + " import perftest " + dir.string() +
                             " > /dev/null 2> " + (dir / "err.txt").string();
  CHECK(WEXITSTATUS(std::system(import.c_str())) == 2);
  std::ifstream err(dir / "err.txt");
  std::string said;
  std::getline(err, said);
  CHECK(said == "fabtwin import: expected a log, found a directory at " + dir.string());
}
