// Whole-fabric runs: analytic single-flow timing, fair sharing, loss recovery, determinism,
// and golden regression runs.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include "test_support.h"

#include "models/fabric/fabric.h"
#include "sim/cli/report.h"
#include "sim/statistics.h"

using namespace fabtwin;
namespace fs = std::filesystem;

namespace {

RunResult run_json(const nlohmann::json& scenario, const std::vector<std::string>& sets = {}) {
  ScenarioDocument doc = testing::inline_document(scenario);
  for (const std::string& s : sets) apply_override(doc.root, s);
  Fabric fabric(doc);
  return fabric.run();
}

nlohmann::json star(int hosts, const nlohmann::json& traffic) {
  return {{"topology", {{"type", "star"}, {"hosts", hosts}}},
          {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
          {"nic", {{"mtu", "4096B"}}},
          {"traffic", traffic},
          {"run", {{"end", "1s"}}}};
}

}  // namespace

TEST_CASE("a single flow's completion time is exactly the store-and-forward arithmetic", "[run]") {
  const int packets = 100;
  const RunResult r = run_json(star(
      2,
      {{{"type", "flows"},
        {"flows", {{{"src", 0}, {"dst", 1}, {"size", std::to_string(packets * 4096) + "B"}}}}}}));
  REQUIRE(r.flows.size() == 1);
  REQUIRE(r.flows[0].completed);
  const BitsPerSec rate = parse_rate("100Gbps");
  const Time d = parse_time("1us");
  // The sender serializes every frame back to back (the first carries the RETH, 16 B more).
  // The switch starts forwarding once the first frame is in and then stays busy: the longer
  // first frame delays every later one by its extra wire time. The last ACK crosses two links.
  const Time first = roce::wire_time(roce::data_frame(4096, true), rate);
  const Time middle = roce::wire_time(roce::data_frame(4096, false), rate);
  const Time sent = first + middle * (packets - 1);
  const Time ack = roce::wire_time(roce::ack_frame(), rate);
  CHECK(r.flows[0].fct().ps == (first + d + sent + d + (ack + d) * 2).ps);
  CHECK(r.flows[0].packets_retransmitted == 0);
  CHECK(r.flows[0].bytes_received == packets * 4096);
}

TEST_CASE("message_overhead adds exactly itself to a lone flow's first packet and FCT",
          "[run][message_overhead]") {
  const nlohmann::json scenario =
      star(2, {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "100KB"}}}}}});
  const RunResult plain = run_json(scenario);
  const RunResult late = run_json(scenario, {"nic.message_overhead=380ns"});
  REQUIRE(plain.flows[0].completed);
  REQUIRE(late.flows[0].completed);
  CHECK(late.flows[0].fct() - plain.flows[0].fct() == nanoseconds(380));
  CHECK(late.flows[0].last_byte_received - plain.flows[0].last_byte_received == nanoseconds(380));
}

TEST_CASE("a long flow's goodput is the line rate less the RoCEv2 framing", "[run]") {
  const RunResult r = run_json(
      star(2, {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "100MB"}}}}}}));
  REQUIRE(r.flows[0].completed);
  const double analytic = 100e9 * 4096.0 / (4096 + roce::kHeaderBytes + roce::kWireGapBytes);
  CHECK(analytic == Approx(98.04e9).epsilon(1e-4));  // docs/references.md §4.3
  CHECK(r.flows[0].goodput_bps() == Approx(analytic).epsilon(0.001));
}

TEST_CASE("flows sharing one bottleneck get equal shares and fill it", "[run]") {
  const int n = 4;
  const RunResult r =
      run_json(star(n + 1, {{{"type", "incast"}, {"receiver", 0}, {"size", "4MB"}}}),
               {"fabric.switch.buffer=64MB"});
  REQUIRE(r.flows.size() == n);
  std::vector<double> goodput;
  Time last{};
  for (const FlowRecord& f : r.flows) {
    REQUIRE(f.completed);
    goodput.push_back(f.goodput_bps());
    last = std::max(last, f.finish);
  }
  const double line = 100e9 * 4096.0 / (4096 + 82);
  CHECK(jain_index(goodput) > 0.999);
  for (double g : goodput) CHECK(g == Approx(line / n).epsilon(0.02));
  CHECK(n * 4e6 * 8 / last.seconds() == Approx(line).epsilon(0.02));
  int64_t drops = 0;
  for (const PortRecord& p : r.ports) drops += p.drops();
  CHECK(drops == 0);
}

TEST_CASE("losses from a small buffer are recovered go-back-N", "[run]") {
  const RunResult r = run_json(star(5, {{{"type", "incast"}, {"receiver", 0}, {"size", "1MB"}}}),
                               {"fabric.switch.buffer=200KB", "fabric.switch.reserve=0B",
                                "fabric.pfc.enabled=false", "nic.ack_timeout=100us"});
  int64_t drops = 0, retransmitted = 0;
  for (const PortRecord& p : r.ports) drops += p.drops();
  for (const FlowRecord& f : r.flows) {
    CHECK(f.completed);
    CHECK(f.bytes_received == 1'000'000);
    retransmitted += f.packets_retransmitted;
  }
  CHECK(drops > 0);
  CHECK(retransmitted >= drops);
  CHECK_FALSE(r.reached_end);
}

TEST_CASE("the same seed gives the same results and another seed different ones",
          "[run][determinism]") {
  const std::vector<std::string> sets = {"run.end=300us"};
  const auto scenario =
      load_scenario(fs::path(FABTWIN_SOURCE_DIR) / "scenarios/default.json", sets);
  auto report = [](const ScenarioDocument& doc) {
    Fabric fabric(doc);
    const RunResult r = fabric.run();
    nlohmann::json j = json_report(r);
    j.erase("engine");  // wall-clock figures are the only ones allowed to differ
    return std::make_pair(r.fingerprint, j);
  };
  const auto a = report(scenario);
  const auto b = report(scenario);
  CHECK(a.first == b.first);
  CHECK(a.second == b.second);
  ScenarioDocument other = scenario;
  apply_override(other.root, "run.seed=2");
  CHECK(report(other).first != a.first);
}

// Golden runs: the fingerprint and headline figures of fixed scenarios, stored in
// tests/golden/. A deliberate model change regenerates them with FABTWIN_UPDATE_GOLDEN=1.
TEST_CASE("golden regression runs reproduce their stored results", "[run][golden]") {
  const fs::path dir = fs::path(FABTWIN_SOURCE_DIR) / "tests/golden";
  const bool update = std::getenv("FABTWIN_UPDATE_GOLDEN") != nullptr;
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    nlohmann::json golden = nlohmann::json::parse(std::ifstream(entry.path()));
    std::vector<std::string> sets = golden.value("set", std::vector<std::string>{});
    Fabric fabric(
        load_scenario(fs::path(FABTWIN_SOURCE_DIR) / golden["scenario"].get<std::string>(), sets));
    const RunResult r = fabric.run();
    const RunFigures f = run_figures(r);
    nlohmann::json now = {{"fingerprint", hex64(r.fingerprint)},
                          {"events", r.events},
                          {"flows_completed", f.completed},
                          {"fct_p50_ps", f.fct_p50_ps},
                          {"fct_p99_ps", f.fct_p99_ps},
                          {"drops", f.drops},
                          {"max_switch_queue_bytes", f.max_queue_bytes}};
    for (const CollectiveRow& row : r.collectives) {
      now["collective_time_us"].push_back(row.time_us);
      now["collective_busbw"].push_back(row.busbw);
    }
    INFO(entry.path().filename().string());
    if (update) {
      golden["expect"] = now;
      std::ofstream(entry.path()) << golden.dump(2) << "\n";
    } else {
      CHECK(golden["expect"] == now);
    }
    ++checked;
  }
  CHECK(checked >= 2);
}

// A SEND differs from a WRITE on the wire by the 16-byte RETH of the first packet only. A
// 100 KB message over one switch at 100 Gb/s completes 16 B x 80 ps sooner per link: the switch
// starts each later packet only when the longer first one has left, so the 16 B delay the
// whole train on both links, as they delay a one-packet message.
TEST_CASE("a multi-packet SEND completes one RETH's serialization before the WRITE",
          "[run][send]") {
  const auto fct = [](const std::string& verb) {
    Fabric fabric(
        load_scenario(fs::path(FABTWIN_SOURCE_DIR) / "scenarios/validate/link_timing.json",
                      {"traffic[0].flows[0].size=100KB", "traffic[0].verb=" + verb}));
    const RunResult r = fabric.run();
    REQUIRE(r.flows.size() == 1);
    REQUIRE(r.flows[0].completed);
    CHECK(r.flows[0].rnr_naks == 0);
    return r.flows[0].fct();
  };
  CHECK(fct("write") - fct("send") == Time{2 * 16 * 80});
}
