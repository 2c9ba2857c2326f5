// A run's cost estimated before it starts: settings that would never let a run end are refused
// with their path, costly ones are warned about with the expected cost.
#include <catch2/catch.hpp>

#include "models/fabric/fabric_spec.h"
#include "sim/params.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

const nlohmann::json kStar = {
    {"topology", {{"type", "star"}, {"hosts", 4}}},
    {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
    {"traffic", {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "64KB"}}}}}}},
    {"run", {{"end", "1ms"}}}};

// Two nodes of four GPUs on one 200 Gb/s rail: an all-gather sweep of 1 MiB to 256 MiB.
const nlohmann::json kCollective = {
    {"topology",
     {{"type", "rail_optimized"},
      {"nodes", 2},
      {"gpus_per_node", 4},
      {"nics_per_node", 1},
      {"spines", 0}}},
    {"fabric",
     {{"link", {{"rate", "200Gbps"}, {"delay", "1us"}}}, {"switch", {{"buffer", "32MB"}}}}},
    {"traffic",
     {{{"type", "collective"},
       {"op", "all_gather"},
       {"min_bytes", "1MiB"},
       {"max_bytes", "256MiB"},
       {"step_factor", 4},
       {"iterations", 2}}}},
    {"run", {{"end", "100ms"}}}};

FabricSpec resolve(nlohmann::json scenario, const std::string& path, const nlohmann::json& value) {
  nlohmann::json* at = &scenario;
  std::string rest = path;
  for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) {
    at = &(*at)[rest.substr(0, dot)];
  }
  (*at)[rest] = value;
  return FabricSpec::resolve(testing::inline_document(scenario));
}

std::string error_of(const nlohmann::json& scenario, const std::string& path,
                     const nlohmann::json& value) {
  try {
    resolve(scenario, path, value);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("a sampling period finer than a frame is refused, a costly one warned about",
          "[run_cost]") {
  for (const char* path : {"output.queue_sample_interval", "output.rate_sample_interval"}) {
    nlohmann::json dcqcn = kStar;
    dcqcn["nic"]["cc"]["algorithm"] = "dcqcn";
    const std::string said = error_of(dcqcn, path, "1ps");
    CHECK_THAT(said, Catch::Contains(path) && Catch::Contains("expected at least 1ns") &&
                         Catch::Contains("found 1ps"));
    CHECK(resolve(dcqcn, path, "10us").warnings.empty());  // the default costs nothing
  }
  // 4 switch ports sampled every 1 ns: 4e6 samples of 24 B per simulated ms, about 96 MB, under
  // the warning's 256 MB; a star of 64 hosts fills 1.5 GB per simulated ms.
  CHECK(resolve(kStar, "output.queue_sample_interval", "1ns").warnings.empty());
  nlohmann::json large = kStar;
  large["topology"]["hosts"] = 64;
  const auto warnings = resolve(large, "output.queue_sample_interval", "1ns").warnings;
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("output.queue_sample_interval = 1ns") &&
                              Catch::Contains("64 switch ports") &&
                              Catch::Contains("1.54 GB of samples per simulated ms"));
}

TEST_CASE("an ACK timeout shorter than any round trip is refused", "[run_cost]") {
  // 1 us links: no ACK returns in under 2 us plus a 4096 B frame at 100 Gb/s.
  const std::string said = error_of(kStar, "nic.ack_timeout", "1us");
  CHECK_THAT(said, Catch::Contains("nic.ack_timeout") &&
                       Catch::Contains("expected at least the fabric's shortest round trip") &&
                       Catch::Contains("found 1us"));
  CHECK_THAT(error_of(kStar, "nic.ack_timeout", "1ps"), Catch::Contains("nic.ack_timeout"));
  CHECK(resolve(kStar, "nic.ack_timeout", "3us").warnings.empty());
}

TEST_CASE("a collective sweep the run ends before is pointed out with its first late size",
          "[run_cost]") {
  CHECK(resolve(kCollective, "run.end", "1s").warnings.empty());
  // NCCL's model: 1, 4 and 16 MiB take a few ms together at 24 GB/s; 64 MiB is beyond 5 ms.
  const auto warnings = resolve(kCollective, "run.end", "5ms").warnings;
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("traffic[0]") && Catch::Contains("5 size(s) x 2") &&
                              Catch::Contains("run.end = 5ms") &&
                              Catch::Contains("sizes from 64 MiB on will not complete"));
}
