// Scenario files: extends, --set overrides, and strict validation with a specific message for
// each kind of mistake.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "models/fabric/fabric.h"
#include "models/fabric/fabric_spec.h"
#include "sim/atomic_file.h"
#include "sim/params.h"
#include "sim/scenario_file.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {
const fs::path kData = FABTWIN_TEST_DATA;

using testing::write_temp;

// A valid 4-host star; each malformed case edits one thing with --set-style overrides.
const char* kValid = R"({
  "topology": {"type": "star", "hosts": 4},
  "fabric": {"link": {"rate": "100Gbps", "delay": "1us"}},
  "traffic": [{"type": "flows", "flows": [{"src": 0, "dst": 1, "size": "64KiB"}]}],
  "run": {"end": "1ms"}
})";

std::string error_of(const std::vector<std::string>& overrides) {
  try {
    Fabric fabric(load_scenario(write_temp("valid.json", kValid), overrides));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("the valid base scenario builds", "[scenario]") {
  CHECK(error_of({}) == "(no error)");
}

TEST_CASE("extends merges objects key by key, the extending file winning", "[scenario]") {
  const ScenarioDocument doc = load_scenario(kData / "child.json");
  CHECK(doc.root["fabric"]["link"]["delay"] == "2us");
  CHECK(doc.root["fabric"]["link"]["rate"] == "100Gbps");
  CHECK(doc.root["run"]["seed"] == 9);
  CHECK(doc.root["run"]["end"] == "1ms");
  CHECK_FALSE(doc.root.contains("extends"));
}

TEST_CASE("null in an extending file or in --set removes what the base set", "[scenario]") {
  // A fat-tree base extended into a star: its k would stay behind and be refused, naming the
  // way out; with "k": null (or --set topology.k=null) the star stands alone.
  write_temp("fat_tree_base.json", R"({
    "topology": {"type": "fat_tree", "k": 4},
    "fabric": {"link": {"rate": "100Gbps", "delay": "1us"}},
    "run": {"end": "1ms"}})");
  const fs::path star = write_temp("star_child.json", R"({"extends": "fat_tree_base.json",
    "topology": {"type": "star", "hosts": 4}})");
  const fs::path fixed = write_temp("star_fixed.json", R"({"extends": "fat_tree_base.json",
    "topology": {"type": "star", "hosts": 4, "k": null}, "fabric": {"link": {"delay": null}}})");
  CHECK_THROWS_WITH(FabricSpec::resolve(load_scenario(star)),
                    Catch::Contains("at topology.k") && Catch::Contains("does not apply") &&
                        Catch::Contains("\"k\": null in the extending file") &&
                        Catch::Contains("--set topology.k=null"));
  const ScenarioDocument doc = load_scenario(fixed);
  CHECK_FALSE(doc.root["topology"].contains("k"));
  CHECK_FALSE(doc.root["fabric"]["link"].contains("delay"));  // its default applies
  CHECK(doc.root["fabric"]["link"]["rate"] == "100Gbps");
  CHECK(FabricSpec::resolve(doc).topology.hosts == 4);
  CHECK(FabricSpec::resolve(load_scenario(star, {"topology.k=null"})).topology.hosts == 4);
  // A whole section replaced from the command line, nulls inside it dropped.
  const ScenarioDocument replaced =
      load_scenario(star, {R"(topology={"type": "star", "hosts": 6, "k": null})"});
  CHECK(replaced.root["topology"] == nlohmann::json({{"type", "star"}, {"hosts", 6}}));
}

TEST_CASE("an extends cycle is refused", "[scenario]") {
  CHECK_THROWS_WITH(load_scenario(kData / "cycle_a.json"), Catch::Contains("cycle"));
}

TEST_CASE("overrides (--set) replace values, arrays by index, and creates missing objects",
          "[scenario]") {
  nlohmann::json j = nlohmann::json::parse(kValid);
  apply_override(j, "fabric.link.rate=25Gbps");
  apply_override(j, "traffic[0].flows[0].dst=3");
  apply_override(j, "run.seed=42");
  apply_override(j, "nic.mtu=1024B");
  CHECK(j["fabric"]["link"]["rate"] == "25Gbps");
  CHECK(j["traffic"][0]["flows"][0]["dst"] == 3);
  CHECK(j["run"]["seed"] == 42);
  CHECK(j["nic"]["mtu"] == "1024B");
  CHECK_THROWS_WITH(apply_override(j, "traffic[3].size=1MB"),
                    Catch::Contains("traffic[3]") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(apply_override(j, "novalue"), Catch::Contains("path=value"));
}

TEST_CASE("malformed scenarios are answered by their specific error", "[scenario]") {
  using Catch::Contains;
  struct Case {
    std::vector<std::string> set;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {{"fabrik={}"}, {"at fabrik", "unknown section"}},
      {{"fabric.link.rat=1"}, {"at fabric.link.rat", "unknown key", "rate, delay"}},
      {{"fabric.link.rate=100G"}, {"at fabric.link.rate", "Gbps", "\"100G\""}},
      {{"fabric.link.delay=1"},
       {"at fabric.link.delay", "written as text with its unit", "found 1"}},
      {{"fabric.link.delay=-5us"}, {"at fabric.link.delay", "negative"}},
      {{"topology.type=torus"}, {"at topology.type", "star,leaf_spine,fat_tree", "torus"}},
      {{"topology.hosts=1"}, {"at topology.hosts", "2..65536", "found 1"}},
      {{"topology.k=4"}, {"at topology.k", "does not apply"}},
      {{"topology.type=fat_tree", "topology.hosts=null", "topology.k=5"},
       {"at topology.k", "even radix", "5"}},
      {{"traffic[0].flows[0].dst=9"}, {"at traffic[0].flows[0].dst", "host index 0..3", "9"}},
      {{"traffic[0].flows[0].dst=0"}, {"at traffic[0].flows[0].dst", "other than src"}},
      {{"traffic[0].flows[0].size=big"}, {"at traffic[0].flows[0].size", "a size like"}},
      {{"traffic[0].flows[0].siez=1MB"}, {"at traffic[0].flows[0].siez", "unknown key"}},
      {{"traffic[0].type=storm"}, {"at traffic[0].type", "incast", "storm"}},
      {{"traffic[0]={\"type\":\"incast\",\"senders\":7,\"size\":\"1MB\"}"},
       {"at traffic[0].senders", "sender count 1..3", "7"}},
      {{"traffic[0]={\"type\":\"poisson\",\"cdf\":\"nosuch\",\"duration\":\"1ms\"}"},
       {"at traffic[0].cdf", "nosuch.txt"}},
      {{"traffic[0]={\"type\":\"poisson\",\"load\":1.5,\"duration\":\"1ms\"}"},
       {"at traffic[0].load", "between 0 and 1"}},
      {{"traffic[0]={\"type\":\"permutation\"}"}, {"at traffic[0].size", "required"}},
      {{"nic.mtu=0B"}, {"at nic.mtu", "1B to 9000B"}},
      {{"fabric.switch.buffer=10B"}, {"at fabric.switch.buffer", "at least two frames"}},
      {{"fabric.switch.buffer=100KB"}, {"at fabric.switch.buffer", "sets aside", "found 100KB"}},
      {{"fabric.ecn.kmin=300KB"}, {"at fabric.ecn.kmin", "kmin <= kmax", "300KB"}},
      {{"fabric.ecn.by_rate={\"100G\":{}}"}, {"at fabric.ecn.by_rate.100G", "Gbps"}},
      {{"fabric.ecn.by_rate={\"100Gbps\":{\"kmin\":\"1KB\"}}"},
       {"at fabric.ecn.by_rate.100Gbps.kmax", "required"}},
      {{"fabric.pfc.lossless_priorities=[3,9]"},
       {"at fabric.pfc.lossless_priorities[1]", "priority 0..7", "9"}},
      {{"fabric.pfc.pause_quanta=70000"}, {"at fabric.pfc.pause_quanta", "1..65535"}},
      {{"fabric.pfc.refresh_interval=soon"}, {"at fabric.pfc.refresh_interval", "\"auto\" or"}},
      {{"fabric.switch.alpha=-2"}, {"at fabric.switch.alpha", "positive factor"}},
      {{"fabric.switch.headroom=lots"}, {"at fabric.switch.headroom", "\"auto\" or"}},
      {{"fabric.switch.threshold=fixed"}, {"at fabric.switch.threshold", "dynamic,static"}},
      {{"fabric.qos.dscp_to_priority={\"64\":1}"},
       {"at fabric.qos.dscp_to_priority.64", "DSCP 0..63"}},
      {{"fabric.qos.weights=[1,2]"}, {"at fabric.qos.weights", "8 weights"}},
      {{"fabric.pfc.enable=true"}, {"at fabric.pfc.enable", "unknown key"}},
      {{"traffic[0].flows[0].dscp=70"}, {"at traffic[0].flows[0].dscp", "0..63"}},
      {{"run.end=soon"}, {"at run.end", "a time like"}},
      {{"routing.algorithm=spray"}, {"at routing.algorithm", "ecmp", "spray"}},
      {{"output.hdf5=3"}, {"at output.hdf5", "expected a string"}},
  };
  for (const Case& c : cases) {
    const std::string message = error_of(c.set);
    INFO("override: " << c.set.back() << "\nmessage: " << message);
    for (const std::string& s : c.says) CHECK_THAT(message, Contains(s));
  }
}

TEST_CASE("a file that is not JSON is reported with its line and column", "[scenario]") {
  const fs::path bad = write_temp("bad.json", "{\n  \"run\": {\"end\": \"1ms\",}\n}\n");
  CHECK_THROWS_WITH(load_scenario(bad),
                    Catch::Contains("bad.json:2:") && Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(load_scenario(kData / "no-such-file.json"),
                    Catch::Contains("cannot read the JSON file"));
}

TEST_CASE("deep nesting, a directory for a file and a non-decimal index are refused by name",
          "[scenario]") {
  // 100,000 levels would overflow the stack of the (recursive) JSON parser and printer.
  const fs::path deep = write_temp(
      "deep.json", "{\"topology\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
  CHECK_THROWS_WITH(load_scenario(deep),
                    Catch::Contains("deep.json") && Catch::Contains("nested at most 64 levels"));
  const fs::path shallow = write_temp("shallow.json", "{\"description\": \"[[[{{{\\\"\"}");
  CHECK_NOTHROW(load_scenario(shallow));  // brackets inside a string do not nest
  CHECK_THROWS_WITH(load_scenario(shallow, {"description=" + std::string(1000, '[')}),
                    Catch::Contains("--set description") && Catch::Contains("nested at most"));
  const fs::path extends_dir = write_temp("extends-dir.json", R"({"extends": "."})");
  CHECK_THROWS_WITH(load_scenario(extends_dir),
                    Catch::Contains("at extends[0]") && Catch::Contains("found a directory"));
  // traffic[0x1] is not traffic[0]; std::stoul would have read the leading 0.
  const fs::path two =
      write_temp("two-generators.json", R"({"traffic": [{"type": "incast"}, {"type": "incast"}]})");
  for (const char* index : {"0x1", " 1", "+1", "1e0", ""}) {
    INFO("index \"" << index << "\"");
    CHECK_THROWS_WITH(load_scenario(two, {std::string("traffic[") + index + "].size=1MB"}),
                      Catch::Contains("expected an array index"));
  }
  CHECK(load_scenario(two, {"traffic[1].size=1MB"}).root["traffic"][1]["size"] == "1MB");
}

TEST_CASE("an output file that cannot be written is refused before the run", "[scenario][cli]") {
  const fs::path ok = write_temp("valid-out.json", kValid);
  const fs::path log = ok.parent_path() / "out-check.log";
  for (const std::string option :
       {"--out /", "--out /proc/no-such/x.h5", "--json /proc/x.json", "--trace /dev/null/x.json"}) {
    INFO(option);
    const std::string command = std::string(FABTWIN_BINARY) + " run " + ok.string() + " " + option +
                                " > " + log.string() + " 2>&1";
    const int status = std::system(command.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    std::ifstream in(log);
    const std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(said, Catch::Contains("fabtwin run: " + option));
    CHECK_THAT(said, !Catch::Contains("engine"));  // refused before anything ran
  }
}

TEST_CASE("output folders made by several processes at once are accepted", "[scenario][cli]") {
  // ctest runs fixtures in parallel that write into one new folder: each must accept a folder
  // another made a moment before (create_directories then reports false without an error).
  for (int round = 0; round < 20; ++round) {
    const fs::path dir =
        write_temp("race.txt", "").parent_path() / ("race-" + std::to_string(round)) / "deep";
    std::vector<fs::path> targets;
    for (int w = 0; w < 8; ++w) targets.push_back((dir / "x").concat(std::to_string(w) + ".h5"));
    std::vector<std::thread> writers;
    std::atomic<int> refused{0};
    for (const fs::path& target : targets) {
      writers.emplace_back([&refused, &target] {
        try {
          check_writable(target, "--out");
        } catch (const OutputPathError&) {
          ++refused;
        }
      });
    }
    for (std::thread& t : writers) t.join();
    CHECK(refused == 0);
  }
}

TEST_CASE("the CLI exits non-zero on a bad scenario and writes no result file", "[scenario][cli]") {
  const fs::path bad = write_temp("bad-unit.json", R"({"fabric": {"link": {"rate": "fast"}}})");
  const fs::path out = bad.parent_path() / "should-not-exist.h5";
  const std::string command = std::string(FABTWIN_BINARY) + " run " + bad.string() + " --out " +
                              out.string() + " > /dev/null 2>&1";
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 2);
  CHECK_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(bad.parent_path())) {
    CHECK(entry.path().string().find(".partial-") == std::string::npos);
  }
}

TEST_CASE("an error quotes the start of a value without serializing all of it", "[scenario]") {
  nlohmann::json small = {{"a", 1}, {"b", {1, 2, "three"}}, {"c", nullptr}};
  CHECK(json_text(small) == small.dump());
  // A large section: the quote is dump()'s first 77 characters and "...".
  nlohmann::json big = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) big.push_back({{"src", i}, {"dst", i + 1}, {"size", "1MB"}});
  CHECK(json_text(big) == big.dump().substr(0, 77) + "...");
  nlohmann::json exact = std::string(78, 'x');  // 80 characters with its quotes: kept whole
  CHECK(json_text(exact) == exact.dump());
}
