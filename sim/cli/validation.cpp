#include "sim/cli/validation.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "models/fabric.h"
#include "sim/statistics.h"

namespace fabtwin {
namespace {

const ParamGroup kCaseParams{
    "validate case", "validate", "Validation case",
    {{"name", ParamType::Text, "", "case name", "fabtwin"},
     {"what", ParamType::Text, "", "what the case checks, in a sentence", "fabtwin"},
     {"scenario", ParamType::Text, "", "scenario file, relative to the case file", "fabtwin"},
     {"set", ParamType::List, "[]", "overrides applied to the scenario (path=value)", "fabtwin"},
     {"metric", ParamType::List, "", "{name, flow?}: what is measured", "fabtwin"},
     {"reference", ParamType::List, "", "{value | analytic, source}", "fabtwin"},
     {"tolerance", ParamType::List, "", "{relative | absolute}", "fabtwin"}}};

int64_t flow_arg(const nlohmann::json& metric, const RunResult& r) {
  const int64_t id = metric.value("flow", int64_t{0});
  if (id < 0 || id >= static_cast<int64_t>(r.flows.size())) {
    throw ScenarioError("metric.flow", "no flow " + std::to_string(id) + " in the run");
  }
  if (!r.flows[id].completed) throw std::runtime_error("flow " + std::to_string(id) + " did not complete");
  return id;
}

double measure(const nlohmann::json& metric, const RunResult& r) {
  const std::string name = metric.at("name").get<std::string>();
  if (name == "flow_fct_ps") return static_cast<double>(r.flows[flow_arg(metric, r)].fct().ps);
  if (name == "flow_goodput_bps") return r.flows[flow_arg(metric, r)].goodput_bps();
  if (name == "mean_max_queue_bytes") {
    const std::string node = metric.at("node").get<std::string>();
    double sum = 0;
    int n = 0;
    for (const auto& port : metric.at("ports")) {
      for (const PortRecord& p : r.ports) {
        if (p.node == node && p.port == port.get<uint32_t>()) {
          sum += static_cast<double>(p.max_queue_bytes());
          ++n;
        }
      }
    }
    if (n != static_cast<int>(metric.at("ports").size())) {
      throw ScenarioError("metric.ports", "not every listed port exists on " + node);
    }
    return sum / n;
  }
  std::vector<double> goodput;
  Time first = Time::max(), last{};
  double bits = 0;
  for (const FlowRecord& f : r.flows) {
    if (!f.completed) throw std::runtime_error("flow " + std::to_string(f.spec.id) + " did not complete");
    goodput.push_back(f.goodput_bps());
    first = std::min(first, f.spec.start);
    last = std::max(last, f.finish);
    bits += 8.0 * static_cast<double>(f.spec.size.count);
  }
  if (name == "jain_index") return jain_index(goodput);
  if (name == "aggregate_goodput_bps") return bits / (last - first).seconds();
  throw ScenarioError("metric.name", "expected flow_fct_ps, flow_goodput_bps, mean_max_queue_bytes, "
                                     "jain_index or aggregate_goodput_bps, found \"" + name + "\"");
}

// Analytic references, computed from the same scenario the simulation ran.
double analytic(const std::string& name, const nlohmann::json& metric, const Fabric& fabric,
                const nlohmann::json& scenario, const RunResult& result) {
  const NicConfig nic = HostNic::read_config(scenario);
  const Topology& topo = fabric.topology();
  const TopologyLink& host_link = topo.links.front();
  if (name == "single_packet_round_trip") {
    // Store and forward over h links each way: every hop costs the frame's wire time plus the
    // propagation delay; the ACK returns the same way.
    const FlowSpec& f = fabric.flows().at(static_cast<size_t>(metric.value("flow", 0)));
    const RoutingTable routing(topo);
    const int hops = routing.distance(f.src, f.dst);
    const Time data = roce::wire_time(roce::data_frame(static_cast<int>(f.size.count), true), host_link.rate);
    const Time ack = roce::wire_time(roce::ack_frame(), host_link.rate);
    return static_cast<double>(((data + host_link.delay) * hops + (ack + host_link.delay) * hops).ps);
  }
  if (name == "roce_goodput") {
    // Line rate times payload over (payload + RoCEv2 headers + preamble and inter-frame gap).
    const double payload = static_cast<double>(nic.mtu.count);
    return static_cast<double>(host_link.rate.bps) * payload /
           (payload + roce::kHeaderBytes + roce::kWireGapBytes);
  }
  if (name == "dynamic_threshold_steady_state") {
    // N queues each held at T = alpha (B - sum Q): Q = alpha B / (1 + alpha N).
    const double alpha = read_switch_config(scenario, 0).mmu.egress_alpha;
    const double pool = static_cast<double>(result.buffers.at(0).shared_pool);
    const double n = static_cast<double>(metric.at("ports").size());
    return alpha * pool / (1 + alpha * n);
  }
  throw ScenarioError("reference.analytic", "expected single_packet_round_trip, roce_goodput or "
                                            "dynamic_threshold_steady_state, found \"" + name + "\"");
}

std::filesystem::path cases_dir() { return std::filesystem::path(FABTWIN_SOURCE_DIR) / "validate"; }

}  // namespace

ValidationOutcome run_validation_case(const std::filesystem::path& case_file) {
  std::ifstream in(case_file);
  if (!in) throw std::runtime_error("cannot open validation case " + case_file.string());
  nlohmann::json c;
  try {
    c = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(case_file.string() + ": not valid JSON (" + e.what() + ")");
  }
  ParamReader r(c, "", kCaseParams);
  ValidationOutcome o;
  o.name = r.text("name");
  r.text("what");
  std::vector<std::string> sets;
  for (const auto& s : r.raw("set")) sets.push_back(s.get<std::string>());
  const ScenarioDocument doc = load_scenario(case_file.parent_path() / r.text("scenario"), sets);
  const nlohmann::json& metric = r.raw("metric");
  const nlohmann::json& reference = r.raw("reference");
  const nlohmann::json& tolerance = r.raw("tolerance");
  r.finish();

  Fabric fabric(doc);
  const RunResult result = fabric.run();
  o.metric = metric.at("name").get<std::string>();
  o.simulated = measure(metric, result);
  o.reference = reference.contains("analytic")
                    ? analytic(reference["analytic"].get<std::string>(), metric, fabric, doc.root, result)
                    : reference.at("value").get<double>();
  o.source = reference.value("source", "");
  o.relative = tolerance.contains("relative");
  o.tolerance = o.relative ? tolerance["relative"].get<double>() : tolerance.at("absolute").get<double>();
  const double diff = std::abs(o.simulated - o.reference);
  o.error = o.relative ? diff / std::abs(o.reference) : diff;
  o.passed = o.error <= o.tolerance;
  return o;
}

int command_validate(const std::vector<std::string>& args) {
  std::vector<std::filesystem::path> files;
  if (args.empty()) {
    for (const auto& entry : std::filesystem::directory_iterator(cases_dir())) {
      if (entry.path().extension() == ".json") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  }
  for (const std::string& a : args) {
    const std::filesystem::path named = cases_dir() / (a + ".json");
    files.push_back(std::filesystem::exists(named) ? named : std::filesystem::path(a));
  }
  std::printf("%-24s %-22s %16s %16s %10s %10s  %s\n", "case", "metric", "reference", "simulated",
              "error", "tolerance", "result");
  int failed = 0;
  for (const auto& f : files) {
    const ValidationOutcome o = run_validation_case(f);
    failed += o.passed ? 0 : 1;
    std::printf("%-24s %-22s %16.6g %16.6g %9.4f%s %9.4f%s  %s\n", o.name.c_str(), o.metric.c_str(),
                o.reference, o.simulated, o.relative ? 100 * o.error : o.error, o.relative ? "%" : " ",
                o.relative ? 100 * o.tolerance : o.tolerance, o.relative ? "%" : " ",
                o.passed ? "pass" : "FAIL");
  }
  std::printf("%zu passed, %d failed\n", files.size() - failed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace fabtwin
