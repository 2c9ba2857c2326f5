// Sweeps: the sweep file and its expansion (grid, random, Latin hypercube, ties, constraints),
// refusals (bad axes, invalid values, shadowed keys) naming the point and the path, the resume
// store, the table's statistics, and whole sweeps run by the command: per-point results equal
// to a plain run of the same scenario, and the same table for 1 and 2 jobs.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "models/fabric/fabric.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep.h"
#include "sim/cli/sweep_runner.h"
#include "sim/statistics.h"
#include "sim/sweep/sweep_file.h"
#include "sim/sweep/sweep_store.h"
#include "sim/sweep/sweep_table.h"
#include "tests/test_support.h"

using namespace fabtwin;
using namespace fabtwin::sweep;
using nlohmann::json;

namespace {

const std::filesystem::path kData = std::filesystem::path(FABTWIN_TEST_DATA) / "sweep";

SweepFile sweep_of(const json& j) {
  return parse_sweep(j, kData / "inline.sweep.json");
}

json tiny_sweep() {
  return json::parse(R"({
    "scenario": "tiny.json",
    "set": {"run.end": "100us"},
    "axes": [{"path": "fabric.ecn.kmin", "values": ["5KB", "40KB"]}],
    "metrics": ["throughput_bps"]
  })");
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = testing::temp_dir() / ("sweep-" + name);
  std::filesystem::remove_all(dir);
  return dir;
}

// Expects `f` to throw a SweepError whose message holds every one of `parts`.
template <class F>
void refused(F f, const std::vector<std::string>& parts) {
  try {
    f();
    FAIL("expected a SweepError");
  } catch (const SweepError& e) {
    const std::string what = e.what();
    INFO(what);
    for (const std::string& p : parts) CHECK(what.find(p) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a grid is the cross product, last axis fastest, with ranges and ties", "[sweep]") {
  json j = tiny_sweep();
  j["axes"] = json::parse(R"([
    {"path": "fabric.ecn.kmin", "range": {"from": "5KB", "to": "80KB", "steps": 5, "scale": "log"}},
    {"path": "nic.cc.dce_tcp_g", "range": {"from": 1008, "to": 1020, "steps": 3}},
    {"path": "fabric.ecn.kmax", "tie": {"to": "fabric.ecn.kmin", "times": 4}}
  ])");
  const SweepFile s = sweep_of(j);
  REQUIRE(s.axes[0].values == std::vector<json>{"5KB", "10KB", "20KB", "40KB", "80KB"});
  REQUIRE(s.axes[1].values == std::vector<json>{1008, 1014, 1020});
  // Quantities come out in whole base units (bytes here): 10^3.5 B = 3162.28 B -> 3162 B.
  json uneven = tiny_sweep();
  uneven["axes"][0]["range"] = {{"from", "1KB"}, {"to", "10KB"}, {"steps", 3}, {"scale", "log"}};
  uneven["axes"][0].erase("values");
  CHECK(sweep_of(uneven).axes[0].values == std::vector<json>{"1KB", "3.162KB", "10KB"});
  CHECK(join_quantity(2.5, "us", false) == "2.5us");
  CHECK(join_quantity(1.0000004, "ns", false) == "1ns");  // whole picoseconds
  CHECK(join_quantity(7.0, "", true) == 7);
  const auto v = design_values(s);
  REQUIRE(v.size() == 15);
  CHECK(v[0] == std::vector<json>{"5KB", 1008, "20KB"});
  CHECK(v[1] == std::vector<json>{"5KB", 1014, "20KB"});
  CHECK(v[3] == std::vector<json>{"10KB", 1008, "40KB"});
  CHECK(v[14] == std::vector<json>{"80KB", 1020, "320KB"});
  // Every point gets its values through the same overrides as --set.
  const json base = load_scenario(kData / "tiny.json").root;
  const std::vector<Point> points = expand(s, base);
  REQUIRE(points.size() == 15);
  CHECK(points[3].root["fabric"]["ecn"]["kmin"] == "10KB");
  CHECK(points[3].root["fabric"]["ecn"]["kmax"] == "40KB");
  CHECK(points[3].root["nic"]["cc"]["dce_tcp_g"] == 1008);
  CHECK(points[3].root["nic"]["cc"]["profile"] == "paper");  // the rest of the base stays
}

TEST_CASE("random and Latin-hypercube designs are deterministic and cover the ranges", "[sweep]") {
  json j = tiny_sweep();
  j["axes"] = json::parse(R"([
    {"path": "fabric.ecn.kmin", "range": {"from": "5KB", "to": "80KB"}},
    {"path": "nic.cc.dce_tcp_g", "range": {"from": 1000, "to": 1020}},
    {"path": "fabric.ecn.pmax", "values": [0.1, 0.2, 0.5, 1.0]}
  ])");
  for (const char* type : {"random", "latin_hypercube"}) {
    INFO(type);
    j["design"] = {{"type", type}, {"points", 8}, {"seed", 7}};
    const auto a = design_values(sweep_of(j));
    CHECK(a == design_values(sweep_of(j)));
    j["design"]["seed"] = 8;
    CHECK(a != design_values(sweep_of(j)));
    REQUIRE(a.size() == 8);
    for (const auto& p : a) {
      const double kmin = *base_value(p[0]);
      CHECK(kmin >= 5000);
      CHECK(kmin <= 80000);
      CHECK(p[1].is_number_integer());  // integer ends: whole values
    }
  }
  // Latin hypercube: each of the 8 strata of every range holds exactly one point.
  j["design"] = {{"type", "latin_hypercube"}, {"points", 8}, {"seed", 3}};
  std::set<int> strata;
  for (const auto& p : design_values(sweep_of(j))) {
    strata.insert(static_cast<int>((*base_value(p[0]) - 5000) / 75000 * 8));
  }
  CHECK(strata.size() == 8);
}

TEST_CASE("constraints drop points, and one no point satisfies is refused", "[sweep]") {
  json j = tiny_sweep();
  j["axes"] = json::parse(R"([
    {"path": "fabric.ecn.kmin", "values": ["5KB", "40KB", "100KB"]},
    {"path": "fabric.ecn.kmax", "values": ["50KB", "200KB"]}
  ])");
  j["constraints"] = {"fabric.ecn.kmin < fabric.ecn.kmax", "2 * fabric.ecn.kmin <= 150KB"};
  const json base = load_scenario(kData / "tiny.json").root;
  const std::vector<Point> points = expand(sweep_of(j), base);
  // (5,50) (5,200) (40,50) (40,200); 100KB fails the second.
  REQUIRE(points.size() == 4);
  CHECK(points[2].values == std::vector<json>{"40KB", "50KB"});
  CHECK(points[3].index == 3);
  j["constraints"] = {"fabric.ecn.kmin > 1MB"};
  refused([&] { expand(sweep_of(j), base); }, {"constraints[0]", "every point"});
  j["constraints"] = {"fabric.ecn.kmin < run.end"};
  refused([&] { expand(sweep_of(j), base); }, {"compares a size with a time"});
  // Random designs draw until enough points satisfy them.
  j["axes"][1] = {{"path", "fabric.ecn.kmax"}, {"range", {{"from", "10KB"}, {"to", "200KB"}}}};
  j["design"] = {{"type", "random"}, {"points", 5}};
  j["constraints"] = {"fabric.ecn.kmin < fabric.ecn.kmax"};
  const std::vector<Point> drawn = expand(sweep_of(j), base);
  REQUIRE(drawn.size() == 5);
  for (const Point& p : drawn) CHECK(*base_value(p.values[0]) < *base_value(p.values[1]));
}

TEST_CASE("a malformed sweep file is refused naming its key", "[sweep]") {
  auto with = [](const std::string& key, const json& value) {
    json j = tiny_sweep();
    j[key] = value;
    return j;
  };
  refused([&] { sweep_of(with("axis", json::array())); }, {"at axis", "unknown key"});
  refused([&] { sweep_of(with("axes", json::array())); }, {"at axes"});
  refused([&] { sweep_of(with("seeds", 0)); }, {"at seeds"});
  refused([&] { sweep_of(with("design", {{"type", "sobol"}})); }, {"design.type", "sobol"});
  refused([&] { sweep_of(with("design", {{"type", "random"}})); }, {"design.points"});
  refused([&] { sweep_of(with("objectives", {"lowest fct"})); }, {"objectives[0]"});
  refused([&] { sweep_of(with("constraints", {"a.b ~ 3"})); }, {"constraints[0]"});
  refused(
      [&] {
        sweep_of(
            with("axes",
                 json::parse(
                     R"([{"path": "a.b", "range": {"from": "5KB", "to": "1ms", "steps": 3}}])")));
      },
      {"axes[0].range", "same unit"});
  refused(
      [&] {
        sweep_of(with("axes", json::parse(R"([{"path": "a.b", "range": {"from": 1, "to": 3}}])")));
      },
      {"axes[0].range.steps"});
  refused(
      [&] {
        sweep_of(with(
            "axes",
            json::parse(R"([{"path": "a", "values": [1]}, {"path": "b", "tie": {"to": "c"}}])")));
      },
      {"axes[1].tie.to", "\"c\""});
  refused([&] { sweep_of(with("axes", json::parse(R"([{"path": "a[x]", "values": [1]}])"))); },
          {"axes[0].path"});
}

TEST_CASE("a bad axis path or value is refused before anything runs, naming point and path",
          "[sweep]") {
  json j = tiny_sweep();
  j["axes"] = json::parse(R"([
    {"path": "nic.cc.dce_tcp_g", "values": [1008, 1016]},
    {"path": "fabric.ecn.kmin", "values": ["5KB", "40 bananas"]}
  ])");
  refused([&] { prepare_sweep(sweep_of(j), {}); },
          {"point 1 ", "fabric.ecn.kmin=\"40 bananas\"", "at fabric.ecn.kmin"});
  // Checked on 3 threads: the same (first) point named.
  refused([&] { prepare_sweep(sweep_of(j), {}, 3); }, {"point 1 ", "seed 1:"});
  j["axes"][1] = {{"path", "nic.cc.no_such_knob"}, {"values", {1, 2}}};
  refused([&] { prepare_sweep(sweep_of(j), {}); }, {"point 0 ", "nic.cc.no_such_knob"});
  j["axes"][1] = {{"path", "traffic[7].size"}, {"values", {"1KB", "2KB"}}};
  refused([&] { prepare_sweep(sweep_of(j), {}); }, {"point 0 ", "traffic[7]"});
  j["axes"][1] = {{"path", "nic.cc.dce_tcp_g"}, {"values", {1}}};
  refused([&] { sweep_of(j); }, {"axes[1].path", "already an axis"});
  j["axes"][1] = {{"path", "fabric.ecn.kmin"}, {"values", {"5KB"}}};
  j["metrics"] = {"fct_p99_ps_by_generator"};
  refused([&] { prepare_sweep(sweep_of(j), {}); }, {"metrics[0]", "fct_p99_ps_by_generator.GROUP"});
  j["metrics"] = {"no_such_metric"};
  refused([&] { prepare_sweep(sweep_of(j), {}); }, {"metrics[0]", "no_such_metric"});
}

TEST_CASE("a shadowed axis is refused, naming the point and the path", "[sweep]") {
  // fabric.ecn.kmin while fabric.ecn.by_rate sets the marking of every port's speed: the
  // scenario check refuses it.
  json j = tiny_sweep();
  j["set"]["fabric.ecn.by_rate"] = {
      {"100Gbps", {{"kmin", "10KB"}, {"kmax", "100KB"}, {"pmax", 0.2}}}};
  refused([&] { prepare_sweep(sweep_of(j), {}); },
          {"point 0 ", "fabric.ecn.kmin", "shadowed by fabric.ecn.by_rate.100Gbps"});
  // by_rate for a speed no link runs at: found by comparing the resolved scenarios.
  j = tiny_sweep();
  j["axes"] = json::parse(R"([
    {"path": "nic.cc.dce_tcp_g", "values": [1008, 1016]},
    {"path": "fabric.ecn.by_rate.25Gbps.kmin", "values": ["5KB", "10KB"]}
  ])");
  j["set"]["fabric.ecn.by_rate.25Gbps"] = {{"kmax", "100KB"}, {"pmax", 0.2}};
  refused([&] { prepare_sweep(sweep_of(j), {}); },
          {"point 0 ", "axis fabric.ecn.by_rate.25Gbps.kmin is shadowed", "\"5KB\" and \"10KB\""});
  // A key no model reads at all.
  j["axes"][1] = {{"path", "description"}, {"values", {"a", "b"}}};
  j["set"].erase("fabric.ecn.by_rate.25Gbps");
  refused([&] { prepare_sweep(sweep_of(j), {}); }, {"axis description is shadowed"});
  // The same values at a speed the fabric has are used: no refusal.
  j["axes"][1] = {{"path", "fabric.ecn.by_rate.100Gbps.kmin"}, {"values", {"5KB", "10KB"}}};
  j["set"] =
      json::parse(R"({"fabric.ecn": {"by_rate": {"100Gbps": {"kmax": "100KB", "pmax": 0.2}}}})");
  CHECK(prepare_sweep(sweep_of(j), {}).tasks.size() == 4);
  // Used at some points only (the 25 Gb/s marking where the links run at 25 Gb/s): accepted,
  // with a warning naming a point where it makes no difference.
  j["axes"] = json::parse(R"([
    {"path": "fabric.link.rate", "values": ["100Gbps", "25Gbps"]},
    {"path": "fabric.ecn.by_rate.25Gbps.kmin", "values": ["5KB", "10KB"]}
  ])");
  j["set"] =
      json::parse(R"({"fabric.ecn": {"by_rate": {"25Gbps": {"kmax": "100KB", "pmax": 0.2}}}})");
  const PreparedSweep partly = prepare_sweep(sweep_of(j), {});
  REQUIRE(partly.warnings.size() == 1);
  CHECK(partly.warnings[0].find("point 0 (fabric.link.rate=\"100Gbps\"") == 0);
  CHECK(partly.warnings[0].find("used at 2 of the 4 points tried") != std::string::npos);
}

TEST_CASE("the store keeps complete records only and refuses another sweep's folder", "[sweep]") {
  const auto dir = fresh_dir("store");
  SweepStore store(dir);
  CHECK_FALSE(store.open("aaaa", "x.sweep.json", ResumeMode::Refuse));
  const json scenario = {{"run", {{"seed", 1}}}};
  const std::string key = run_key("1.0", scenario);
  const json record = {{"key", key},
                       {"fabtwin_version", "1.0"},
                       {"metrics", {{"drops", 0}}},
                       {"scenario", scenario}};
  store.store(key, record);
  CHECK(store.load(key) == record);
  CHECK_FALSE(store.load("fedcba9876543210"));
  // A record whose scenario does not hash to its key (edited by hand, or corrupt) is not one.
  json edited = record;
  edited["scenario"]["run"]["seed"] = 2;
  store.store(key, edited);
  CHECK_FALSE(store.load(key));
  // Nor is another version's record of the same scenario, or one that names no version.
  json other_version = record;
  other_version["fabtwin_version"] = "0.9";
  store.store(key, other_version);
  CHECK_FALSE(store.load(key));
  json unversioned = record;
  unversioned.erase("fabtwin_version");
  store.store(key, unversioned);
  CHECK_FALSE(store.load(key));
  CHECK(run_key("0.9", scenario) != key);
  store.store(key, record);
  // A second sweep on the same folder while this one holds it is refused.
  {
    SweepStore other(dir);
    refused([&] { other.open("aaaa", "x.sweep.json", ResumeMode::Refuse); },
            {"another fabtwin sweep is using this folder"});
  }
  // A torn or foreign file under a record's name is not a finished point.
  std::ofstream(store.record_path("1111111111111111")) << "{\"key\": \"11111111111";
  CHECK_FALSE(store.load("1111111111111111"));
  std::ofstream(store.record_path("2222222222222222")) << record.dump();
  CHECK_FALSE(store.load("2222222222222222"));
  // Debris of an interrupted write goes at the next open.
  std::ofstream(dir / "points" / "3333333333333333.json.partial-12-0") << "{";
  CHECK_FALSE(store.open("aaaa", "x.sweep.json", ResumeMode::Refuse));
  CHECK_FALSE(std::filesystem::exists(dir / "points" / "3333333333333333.json.partial-12-0"));
  refused([&] { store.open("bbbb", "y.sweep.json", ResumeMode::Refuse); },
          {"different sweep", "--resume=keep", "--restart"});
  CHECK(store.open("bbbb", "y.sweep.json", ResumeMode::Keep));
  CHECK(store.load(key) == record);
  CHECK_FALSE(store.open("bbbb", "y.sweep.json", ResumeMode::Restart));
  CHECK_FALSE(store.load(key));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Student t critical values and the 95% interval of a mean", "[sweep]") {
  CHECK(student_t_975(1) == Approx(12.7062));
  CHECK(student_t_975(30) == Approx(2.0423));
  // Beyond the table, the expansion (reference values: R's qt(0.975, df)).
  CHECK(student_t_975(31) == Approx(2.039513).margin(1e-4));
  CHECK(student_t_975(60) == Approx(2.000298).margin(1e-5));
  CHECK(student_t_975(120) == Approx(1.979930).margin(1e-5));
  CHECK(std::isnan(student_t_975(0)));
  const MeanCi m = mean_ci95({1, 2, 3, 4});
  CHECK(m.mean == 2.5);
  CHECK(m.ci95 == Approx(3.1824 * std::sqrt(5.0 / 3) / 2));
  CHECK(std::isnan(mean_ci95({7}).ci95));
  CHECK(mean_ci95({7}).mean == 7);
  CHECK(std::isnan(mean_ci95({}).mean));
}

TEST_CASE("metric values by name and group, ranking and the Pareto front", "[sweep]") {
  const json metrics = json::parse(
      R"({"drops": 3, "jain_index": null, "fct_p99_ps_by_generator": {"0": 10, "1": 20}})");
  CHECK(metric_value(metrics, "drops") == 3.0);
  CHECK_FALSE(metric_value(metrics, "jain_index"));
  CHECK(metric_value(metrics, "fct_p99_ps_by_generator.1") == 20.0);
  CHECK_FALSE(metric_value(metrics, "fct_p99_ps_by_generator.2"));
  Table t;
  t.metrics = {"a", "b"};
  for (auto [a, b] :
       std::vector<std::pair<double, double>>{{1, 9}, {2, 5}, {3, 6}, {4, 1}, {5, 1}}) {
    TableRow r;
    r.point = t.rows.size();
    r.metrics = {{a, 0}, {b, 0}};
    t.rows.push_back(r);
  }
  CHECK(rank_rows(t, {"b", false}) == std::vector<size_t>{3, 4, 1, 2, 0});
  CHECK(rank_rows(t, {"a", true}).front() == 4);
  // min a, min b: (3,6) is dominated by (2,5), (5,1) by (4,1).
  CHECK(pareto_front(t, {"a", false}, {"b", false}) == std::vector<size_t>{0, 1, 3});
  refused([&] { rank_rows(t, {"c", false}); }, {"\"c\""});
}

TEST_CASE(
    "a sweep's runs equal plain runs of the same scenario, and its table does not depend "
    "on the job count",
    "[sweep][slow]") {
  const auto one = fresh_dir("jobs1"), two = fresh_dir("jobs2");
  // The command's report goes to stdout: keep it out of the test log.
  std::stringstream said;
  struct Restore {
    std::streambuf* old;
    ~Restore() { std::cout.rdbuf(old); }
  } restore{std::cout.rdbuf(said.rdbuf())};
  const std::string file = (kData / "tiny.sweep.json").string();
  REQUIRE(command_sweep({file, "--out", one.string(), "--jobs", "1"}, nullptr) == 0);
  REQUIRE(command_sweep({file, "--out", two.string(), "--jobs", "2", "--point-results"}, nullptr) ==
          0);
  const std::string table = read_text(one / "table.csv");
  CHECK(table == read_text(two / "table.csv"));
  CHECK(std::count(table.begin(), table.end(), '\n') == 5);  // header and 4 points
  CHECK(table.rfind("point,fabric.ecn.kmin,fabric.ecn.kmin_value,nic.cc.dce_tcp_g,", 0) == 0);
  size_t records = 0;
  for (const auto& e : std::filesystem::directory_iterator(one / "points")) {
    if (e.path().extension() != ".json") continue;
    ++records;
    const json r = json::parse(read_text(e.path()));
    // The same scenario through `fabtwin run`'s path: the base file, --set overrides.
    std::vector<std::string> sets{"run.end=\"200us\""};
    for (const auto& [path, value] : r["axes"].items()) sets.push_back(path + "=" + value.dump());
    sets.push_back("run.seed=" + std::to_string(r["seed"].get<uint64_t>()));
    Fabric plain(load_scenario(kData / "tiny.json", sets));
    const RunResult result = plain.run();
    CHECK(r["fingerprint"] == hex64(result.fingerprint));
    CHECK(r["key"] == run_key(kVersion, r["scenario"]));
    CHECK(std::filesystem::exists(two / "points" / (r["key"].get<std::string>() + ".h5")));
  }
  CHECK(records == 8);
  // Run again: everything is stored, nothing runs, the same table.
  REQUIRE(command_sweep({file, "--out", one.string()}, nullptr) == 0);
  CHECK(read_text(one / "table.csv") == table);
  std::filesystem::remove_all(one);
  std::filesystem::remove_all(two);
}

TEST_CASE("bad values in a sweep file are refused naming the key, what was expected and found",
          "[sweep]") {
  auto with = [](const std::string& key, const json& value) {
    json j = tiny_sweep();
    j[key] = value;
    return j;
  };
  auto axes = [&](const char* text) { return with("axes", json::parse(text)); };
  // A metric listed twice would give the table two columns of one name.
  refused(
      [&] {
        sweep_of(with("metrics", {"throughput_bps", "drops", "throughput_bps"}));
      },
      {"metrics[2]", "\"throughput_bps\" is listed twice"});
  // A tie's factor is a number above 0.
  for (const char* times : {"0", "-4", "\"4\""}) {
    refused(
        [&] {
          sweep_of(axes((std::string(R"([{"path": "a.kmin", "values": ["5KB"]},
                   {"path": "a.kmax", "tie": {"to": "a.kmin", "times": )") +
                         times + "}}]")
                            .c_str()));
        },
        {"axes[1].tie.times", "above 0", std::string("found ") + times});
  }
  // strtod reads "inf", "nan" and hexadecimal: none is a range end.
  for (const char* end : {"inf", "nan", "1e999", "0x10"}) {
    json j = tiny_sweep();
    j["axes"] = {
        {{"path", "nic.cc.dce_tcp_g"}, {"range", {{"from", 1}, {"to", end}, {"steps", 3}}}}};
    refused([&] { sweep_of(j); }, {"axes[0].range.to", "a number or a quantity", end});
  }
  // run.seed belongs to `seeds`: an axis or a fixed value over it would be overwritten.
  refused([&] { sweep_of(axes(R"([{"path": "run.seed", "values": [1, 2]}])")); },
          {"axes[0].path", "run.seed is set by \"seeds\""});
  refused([&] { sweep_of(with("set", {{"run.seed", 5}})); }, {"set.run.seed", "found 5"});
  // What was found, in messages that named only the key.
  refused(
      [&] {
        sweep_of(axes(
            R"([{"path": "a.b", "range": {"from": 0, "to": 8, "steps": 3, "scale": "log"}}])"));
      },
      {"axes[0].range", "above 0", "found 0 and 8"});
  // A scale that is not text (found by fuzzing sweep files: the JSON library's type_error
  // escaped without a path).
  refused(
      [&] {
        sweep_of(
            axes(R"([{"path": "a.b", "range": {"from": 1, "to": 8, "steps": 3, "scale": 2}}])"));
      },
      {"axes[0].range.scale", "expected linear or log", "found 2"});
  refused(
      [&] {
        sweep_of(with("design", {{"type", "random"}, {"points", 0}}));
      },
      {"design.points", "found 0"});
  refused([&] { sweep_of(with("seeds", 0)); }, {"at seeds", "found 0"});
  refused([&] { sweep_of(with("seeds", json::array())); }, {"at seeds", "found []"});
  refused([&] { sweep_of(with("seeds", {3, -1})); }, {"seeds[1]", "found -1"});
  refused([&] { sweep_of(with("metrics", {"drops", 7})); }, {"metrics[1]", "found 7"});
  refused([&] { sweep_of(with("axes", json::object())); }, {"at axes", "found {}"});
  // A grouped metric needs a group.
  refused([&] { prepare_sweep(sweep_of(with("metrics", {"fct_p99_ps_by_generator."})), {}); },
          {"metrics[0]", "found \"fct_p99_ps_by_generator.\""});
}

TEST_CASE("a constraint that cannot be evaluated names the constraint and the point", "[sweep]") {
  json j = tiny_sweep();
  j["constraints"] = {"fabric.ecn.kmin < 1MB", "fabric.ecn.no_such_knob < 1MB"};
  const json base = load_scenario(kData / "tiny.json").root;
  refused([&] { expand(sweep_of(j), base); },
          {"at constraints[1]", "point 0", "no value at fabric.ecn.no_such_knob"});
  j["constraints"] = {"fabric.ecn.kmin < description"};
  refused([&] { expand(sweep_of(j), base); }, {"at constraints[0]", "not a number or quantity"});
}

TEST_CASE("a sweep says when no run measured one of its metrics", "[sweep][slow]") {
  const auto dir = fresh_dir("unmeasured");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kData / "tiny.json", dir / "tiny.json");
  json j = tiny_sweep();
  j["metrics"] = {"throughput_bps", "fct_p99_ps_by_generator.9"};
  std::ofstream(dir / "x.sweep.json") << j.dump();
  std::stringstream said, warned;
  struct Restore {
    std::ostream& stream;
    std::streambuf* old;
    ~Restore() { stream.rdbuf(old); }
  } restore_out{std::cout, std::cout.rdbuf(said.rdbuf())},
      restore_err{std::cerr, std::cerr.rdbuf(warned.rdbuf())};
  REQUIRE(command_sweep({(dir / "x.sweep.json").string()}, nullptr) == 0);
  const std::string text = warned.str();
  INFO(text);
  CHECK(text.find("no run measured \"fct_p99_ps_by_generator.9\"") != std::string::npos);
  CHECK(text.find("(groups a run has: 0") != std::string::npos);
  CHECK(text.find("throughput_bps") == std::string::npos);
  std::filesystem::remove_all(dir);
}
