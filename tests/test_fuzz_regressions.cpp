// Inputs the scenario fuzzer (tests/fuzz, docs/hardening.md) found: each is answered by a
// ScenarioError that names the file or the JSON path. The raw inputs are kept in
// tests/fuzz/regressions/ and replayed by `make test`.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "models/fabric/fabric_spec.h"
#include "models/fabric/memory_estimate.h"
#include "sim/params.h"
#include "sim/scenario_file.h"
#include "test_support.h"

using namespace fabtwin;
namespace fs = std::filesystem;

using testing::write_temp;

TEST_CASE("a JSON number beyond a double is refused as invalid JSON", "[scenario][fuzz]") {
  // The JSON library throws out_of_range here, not parse_error: it escaped without a path.
  const fs::path file = write_temp("overflow.json", R"({"run": {"seed": 11e308}})");
  CHECK_THROWS_WITH(load_scenario(file), Catch::Contains("overflow.json: not valid JSON") &&
                                             Catch::Contains("number overflow"));
}

TEST_CASE("a fabric too large to build is refused with its size before it is wired",
          "[scenario][fuzz]") {
  // Each parameter within its documented range, the product 16.8 million hosts: it took
  // minutes and gigabytes to wire before the check, which now sees only its size.
  const nlohmann::json big = {
      {"topology",
       {{"type", "leaf_spine"}, {"leaves", 4096}, {"spines", 4096}, {"hosts_per_leaf", 4096}}}};
  const auto on_8_gib = [](const TopologySize& size) { check_fits_in_memory(size, 8LL << 30); };
  CHECK_THROWS_WITH(read_topology(big, {}, on_8_gib),
                    Catch::Contains("at topology:") &&
                        Catch::Contains("leaf_spine of 16,777,216 hosts, 8,192 switches") &&
                        Catch::Contains("needs about"));
  const nlohmann::json rails = {
      {"topology",
       {{"type", "rail_optimized"}, {"nodes", 65536}, {"gpus_per_node", 1024}, {"spines", 1}}}};
  CHECK_THROWS_WITH(read_topology(rails, {}, on_8_gib), Catch::Contains("rail_optimized of"));
  CHECK(
      read_topology({{"topology", {{"type", "star"}, {"hosts", 4}}}}, {}, on_8_gib).nodes.size() ==
      5);
}

TEST_CASE("a --set assignment that is not UTF-8 is refused, naming the byte", "[scenario][fuzz]") {
  // The key reached the scenario, whose text the JSON library then refused to write in
  // FabricSpec::resolve: a type_error, not a ScenarioError.
  nlohmann::json root = {{"run", {{"seed", 1}}}};
  CHECK_THROWS_WITH(apply_override(root, "run.x\xABz=1"),
                    Catch::Contains("at --set") && Catch::Contains("expected UTF-8 text") &&
                        Catch::Contains("index 5: 0xAB"));
  CHECK_THROWS_WITH(apply_override(root, "description=caf\xE9"), Catch::Contains("0xE9"));
  CHECK(root == nlohmann::json{{"run", {{"seed", 1}}}});  // nothing applied
  apply_override(root, "description=caf\xC3\xA9");
  CHECK(root["description"] == "caf\xC3\xA9");
}
