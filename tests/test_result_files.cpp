// Result files never lie: links are written through, FIFOs and devices are never replaced, a
// killed writer leaves nothing that looks complete, the files of one run carry one run id, and
// names or log text that are not UTF-8 are recorded with the replacement character.
#include <hdf5.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sim/atomic_file.h"
#include "sim/cli/result_tables.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = testing::temp_dir() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool has_partials(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".partial-") != std::string::npos) return true;
  }
  return false;
}

// The pid of a process that has ended (and been reaped): nobody owns it now.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

std::string string_attribute(const fs::path& file, const char* name) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0);
  const hid_t a = H5Aopen(f, name, H5P_DEFAULT);
  REQUIRE(a >= 0);
  const hid_t type = H5Aget_type(a);
  char* text = nullptr;
  H5Aread(a, type, &text);
  std::string value = text ? text : "";
  H5free_memory(text);
  H5Tclose(type);
  H5Aclose(a);
  H5Fclose(f);
  return value;
}

}  // namespace

TEST_CASE("a result path that is a symbolic link is written through, the link kept",
          "[result_files]") {
  const fs::path dir = fresh_dir("link");
  fs::create_directories(dir / "real");
  std::ofstream(dir / "real" / "report.json") << "old";
  fs::create_symlink(fs::path("real") / "report.json", dir / "report.json");

  check_writable(dir / "report.json", "--json");
  write_text_atomically(dir / "report.json", "new");
  CHECK(fs::is_symlink(dir / "report.json"));
  CHECK(read_text(dir / "real" / "report.json") == "new");
  CHECK_FALSE(has_partials(dir / "real"));

  // A link to nothing yet: the file is made where it points.
  fs::create_symlink(fs::path("real") / "later.json", dir / "later.json");
  write_text_atomically(dir / "later.json", "made");
  CHECK(fs::is_symlink(dir / "later.json"));
  CHECK(read_text(dir / "real" / "later.json") == "made");
}

TEST_CASE("a FIFO receives text output in place and is refused for HDF5", "[result_files]") {
  const fs::path dir = fresh_dir("fifo");
  const fs::path fifo = dir / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  std::string received;
  std::thread reader([&] { received = read_text(fifo); });
  check_writable(fifo, "--json");  // checking never opens it (that would wait for a reader)
  write_text_atomically(fifo, "{\"through\": true}\n");
  reader.join();
  CHECK(received == "{\"through\": true}\n");
  CHECK(fs::is_fifo(fifo));
  CHECK_FALSE(has_partials(dir));

  try {
    check_writable(fifo, "--out", OutputKind::Seekable);
    FAIL("a FIFO was accepted for HDF5");
  } catch (const OutputPathError& e) {
    CHECK_THAT(e.what(), Catch::Contains("--out") && Catch::Contains("a FIFO") &&
                             Catch::Contains("needs a regular file"));
  }
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("a device is never replaced by a result file", "[result_files]") {
  // Only checks: nothing here writes to the device, whatever the code under test does.
  REQUIRE(fs::is_character_file("/dev/null"));
  try {
    check_writable("/dev/null", "--out", OutputKind::Seekable);
    FAIL("a device was accepted for HDF5");
  } catch (const OutputPathError& e) {
    CHECK_THAT(e.what(), Catch::Contains("a character device"));
  }
  check_writable("/dev/null", "--json");  // text is written through to it
  CHECK(fs::is_character_file("/dev/null"));
}

TEST_CASE("debris of a killed run is recognised by its dead pid and removed", "[result_files]") {
  const fs::path dir = fresh_dir("debris");
  const fs::path target = dir / "result.h5";
  const fs::path dead = target.string() + ".partial-" + std::to_string(dead_pid());
  const fs::path alive = target.string() + ".partial-" + std::to_string(::getppid());
  const fs::path other = dir / "other.h5.partial-1";
  for (const fs::path& p : {dead, alive, other}) std::ofstream(p) << "half";

  check_writable(target, "--out", OutputKind::Seekable);
  CHECK_FALSE(fs::exists(dead));
  CHECK(fs::exists(alive));  // its writer may still be at work
  CHECK(fs::exists(other));  // another target's
}

TEST_CASE("a writer stopped by a signal leaves no partial file and the old file intact",
          "[result_files]") {
  const fs::path dir = fresh_dir("signal");
  const fs::path target = dir / "result.json";
  std::ofstream(target) << "previous run";
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    const pid_t child = ::fork();
    if (child == 0) {
      // As in fabtwin itself: nothing else handles the signals (Catch does, in this process).
      for (int s : {SIGTERM, SIGINT, SIGHUP}) ::signal(s, SIG_DFL);
      write_atomically(target, [&](const fs::path& temp) {
        std::ofstream(temp) << "half of a new run";
        ::raise(sig);
      });
      ::_exit(0);  // not reached
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    CHECK_FALSE(has_partials(dir));
    CHECK(read_text(target) == "previous run");
  }
}

TEST_CASE("a failed write keeps the old file and removes its partial", "[result_files]") {
  const fs::path dir = fresh_dir("throw");
  const fs::path target = dir / "result.json";
  std::ofstream(target) << "previous run";
  CHECK_THROWS_AS(write_atomically(target,
                                   [](const fs::path& temp) {
                                     std::ofstream(temp) << "half";
                                     throw std::runtime_error("disk full");
                                   }),
                  std::runtime_error);
  CHECK(read_text(target) == "previous run");
  CHECK_FALSE(has_partials(dir));
}

TEST_CASE("the files of one run share a run id that no other run has", "[result_files][cli]") {
  const fs::path dir = fresh_dir("run_id");
  const fs::path scenario = dir / "s.json";
  std::ofstream(scenario) << R"({
    "topology": {"type": "star", "hosts": 3},
    "traffic": [{"type": "flows", "flows": [{"src": 0, "dst": 1, "size": "16KB"}]}]
  })";
  auto run = [&](const std::string& name) {
    const std::string command = std::string(FABTWIN_BINARY) + " run " + scenario.string() +
                                " --out " + (dir / (name + ".h5")).string() + " --json " +
                                (dir / (name + ".json")).string() + " --trace " +
                                (dir / (name + ".trace.json")).string() + " > " +
                                (dir / (name + ".txt")).string() + " 2>&1";
    REQUIRE(std::system(command.c_str()) == 0);
    const std::string id = string_attribute(dir / (name + ".h5"), "run_id");
    CHECK(id.size() == 32);
    CHECK(nlohmann::json::parse(read_text(dir / (name + ".json")))["run_id"] == id);
    CHECK(nlohmann::json::parse(read_text(dir / (name + ".trace.json")))["otherData"]["run_id"] ==
          id);
    CHECK_THAT(read_text(dir / (name + ".txt")), Catch::Contains("run id      " + id));
    return id;
  };
  const std::string first = run("a");
  const std::string second = run("b");
  CHECK(first != second);
}

TEST_CASE("names and log text that are not UTF-8 are recorded with U+FFFD, and nothing is lost",
          "[result_files][cli]") {
  // The class of the fuzzer's finding (tests/test_fuzz_regressions.cpp): the JSON library
  // refuses to write invalid UTF-8, so a file name with a Latin-1 byte (0xAB) stopped `run` after
  // the HDF5 file was written and before the JSON report, and `import` likewise with such a byte
  // in a log.
  const fs::path dir = fresh_dir("not_utf8");
  const std::string replaced = "\xEF\xBF\xBD";  // U+FFFD in UTF-8
  const fs::path scenario = dir / "s\xAB.json";
  std::ofstream(scenario) << R"({
    "topology": {"type": "star", "hosts": 3},
    "traffic": [{"type": "flows", "flows": [{"src": 0, "dst": 1, "size": "16KB"}]}]
  })";
  const std::string run = std::string(FABTWIN_BINARY) + " run '" + scenario.string() + "' --out " +
                          (dir / "r.h5").string() + " --json " + (dir / "r.json").string() +
                          " > /dev/null 2>&1";
  REQUIRE(std::system(run.c_str()) == 0);
  const std::string recorded = (dir / ("s" + replaced + ".json")).string();
  CHECK(nlohmann::json::parse(read_text(dir / "r.json"))["scenario_file"] == recorded);
  CHECK(string_attribute(dir / "r.h5", "scenario_file") == recorded);

  const fs::path log = dir / "write_bw.log";
  std::string text =
      read_text(fs::path(FABTWIN_TEST_DATA) / "logs/perftest/write_bw_postlist_gbits.log");
  const size_t device = text.find("Device         : ib0");
  REQUIRE(device != std::string::npos);
  text.replace(device, 20,
               "Device         : i\xAB"
               "b0");
  std::ofstream(log) << text;
  const std::string import = std::string(FABTWIN_BINARY) + " import perftest " + log.string() +
                             " --out " + (dir / "m.h5").string() + " --json " +
                             (dir / "m.json").string() + " > /dev/null 2>&1";
  REQUIRE(std::system(import.c_str()) == 0);
  const nlohmann::json m = nlohmann::json::parse(read_text(dir / "m.json"));
  bool found = false;
  for (const nlohmann::json& row : m["tables"]["hw/perftest_settings"]) {
    if (row["name"] == "Device") found = row["value"] == "i" + replaced + "b0";
  }
  CHECK(found);
  const ResultFile h5((dir / "m.h5").string());
  const std::vector<std::string> names = h5.text_column("hw/perftest_settings", "name");
  const std::vector<std::string> values = h5.text_column("hw/perftest_settings", "value");
  const auto at = std::find(names.begin(), names.end(), "Device");
  REQUIRE(at != names.end());
  CHECK(values[at - names.begin()] == "i" + replaced + "b0");
}
