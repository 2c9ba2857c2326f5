#include "sim/cli/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "models/cc/algorithm.h"
#include "models/cc/dcqcn_fluid_model.h"
#include "models/fabric/fabric.h"
#include "sim/statistics.h"

namespace fabtwin {
namespace {

const ParamGroup kCaseParams{
    "validate case",
    "validate",
    "Validation case",
    {{"name", ParamType::Text, "", "case name", "fabtwin"},
     {"what", ParamType::Text, "", "what the case checks, in a sentence", "fabtwin"},
     {"scenario", ParamType::Text, "", "scenario file, relative to the case file", "fabtwin"},
     {"set", ParamType::List, "[]", "overrides applied to the scenario (path=value)", "fabtwin"},
     {"metric", ParamType::List, "", "{name, flow?}: what is measured", "fabtwin"},
     {"reference", ParamType::List, "", "{value | analytic, source}", "fabtwin"},
     {"baseline", ParamType::List, "{}",
      "{set: [...]}: a second run with these overrides; metrics with ratio_to_baseline divide "
      "by its value",
      "fabtwin"},
     {"report", ParamType::List, "[]", "further metrics printed with the result, not judged",
      "fabtwin"},
     {"tolerance", ParamType::List, "",
      "{relative | absolute} around the reference, or {at_most: true | at_least: true}",
      "fabtwin"}}};

// Time average of a switch port's sampled queue depth from `after` on.
double mean_queue(const nlohmann::json& metric, const RunResult& r) {
  const std::string node = metric.at("node").get<std::string>();
  const uint32_t port = metric.at("port").get<uint32_t>();
  const Time after = parse_time(metric.value("after", std::string("0us")));
  uint32_t index = UINT32_MAX;
  for (uint32_t i = 0; i < r.ports.size(); ++i) {
    if (r.ports[i].node == node && r.ports[i].port == port) index = i;
  }
  if (index == UINT32_MAX)
    throw ScenarioError("metric.port", "no port " + std::to_string(port) + " on " + node);
  double sum = 0;
  int64_t n = 0;
  for (const QueueDepthSample& s : r.queue_samples) {
    if (s.port == index && s.time >= after) {
      sum += static_cast<double>(s.bytes);
      ++n;
    }
  }
  if (n == 0)
    throw std::runtime_error("no queue samples of " + node + " port " + std::to_string(port) +
                             " after " + format_time(after));
  return sum / static_cast<double>(n);
}

// Per-flow mean of the sampled congestion-control rate from `after` on.
std::vector<double> mean_rates(const RunResult& r, Time after) {
  std::vector<double> sum(r.flows.size(), 0.0);
  std::vector<int64_t> n(r.flows.size(), 0);
  for (const RateSampleRecord& s : r.rate_samples) {
    if (s.time < after) continue;
    sum[s.flow] += static_cast<double>(s.rate_bps);
    ++n[s.flow];
  }
  std::vector<double> mean;
  for (size_t f = 0; f < sum.size(); ++f) {
    if (n[f] > 0) mean.push_back(sum[f] / static_cast<double>(n[f]));
  }
  if (mean.empty()) throw std::runtime_error("no rate samples after " + format_time(after));
  return mean;
}

// The first sample time from which Jain's index of the flows' rates stays >= 0.95.
double convergence_time(const RunResult& r) {
  double converged_at = -1;
  size_t i = 0;
  while (i < r.rate_samples.size()) {
    const Time t = r.rate_samples[i].time;
    std::vector<double> rates;
    for (; i < r.rate_samples.size() && r.rate_samples[i].time == t; ++i) {
      rates.push_back(static_cast<double>(r.rate_samples[i].rate_bps));
    }
    if (rates.size() < 2) continue;
    if (jain_index(rates) >= 0.95) {
      if (converged_at < 0) converged_at = static_cast<double>(t.ps);
    } else {
      converged_at = -1;
    }
  }
  if (converged_at < 0) throw std::runtime_error("the rates never converged (Jain >= 0.95)");
  return converged_at;
}

// The queueing delays (microseconds) of a switch port's sampled queue from `after` on, sorted.
std::vector<double> queue_delays_us(const nlohmann::json& metric, const RunResult& r) {
  const Time after = parse_time(metric.value("after", std::string("0us")));
  for (uint32_t i = 0; i < r.ports.size(); ++i) {
    const PortRecord& p = r.ports[i];
    if (p.node != metric.at("node").get<std::string>() ||
        p.port != metric.at("port").get<uint32_t>()) {
      continue;
    }
    std::vector<double> delays;
    for (const QueueDepthSample& s : r.queue_samples) {
      if (s.port == i && s.time >= after) {
        delays.push_back(static_cast<double>(s.bytes) * 8e6 / static_cast<double>(p.rate.bps));
      }
    }
    if (delays.empty()) throw std::runtime_error("no queue samples after " + format_time(after));
    std::sort(delays.begin(), delays.end());
    return delays;
  }
  throw ScenarioError("metric.port", "no such port");
}

double mean_queue_delay_us(const nlohmann::json& metric, const RunResult& r) {
  const std::vector<double> d = queue_delays_us(metric, r);
  double sum = 0;
  for (const double v : d) sum += v;
  return sum / static_cast<double>(d.size());
}

// The `quantile` (0..1) of the sampled queueing delay.
double queue_delay_quantile_us(const nlohmann::json& metric, const RunResult& r) {
  const std::vector<double> d = queue_delays_us(metric, r);
  const double q = metric.at("quantile").get<double>();
  return d[std::min(d.size() - 1, static_cast<size_t>(q * static_cast<double>(d.size())))];
}

// The round trip of one packet of `payload` bytes of flow `f` and its ACK through an idle
// fabric: per hop, store and forward costs each frame's wire time plus the propagation delay.
Time unloaded_round_trip(const Topology& topo, const FlowSpec& f, int payload) {
  const TopologyLink& link = topo.links.front();
  const int hops = RoutingTable(topo).distance(f.src, f.dst);
  const Time data = roce::wire_time(roce::data_frame(payload, true), link.rate);
  const Time ack = roce::wire_time(roce::ack_frame(), link.rate);
  return (data + link.delay) * hops + (ack + link.delay) * hops;
}

int64_t flow_arg(const nlohmann::json& metric, const RunResult& r) {
  const int64_t id = metric.value("flow", int64_t{0});
  if (id < 0 || id >= static_cast<int64_t>(r.flows.size())) {
    throw ScenarioError("metric.flow", "no flow " + std::to_string(id) + " in the run");
  }
  if (!r.flows[id].completed)
    throw std::runtime_error("flow " + std::to_string(id) + " did not complete");
  return id;
}

const CollectiveRow& collective_row(const nlohmann::json& metric, const RunResult& r) {
  const int64_t row = metric.value("row", int64_t{0});
  if (row < 0 || row >= static_cast<int64_t>(r.collectives.size())) {
    throw ScenarioError("metric.row", "no collective row " + std::to_string(row) + " in the run");
  }
  if (r.collectives[row].time_us <= 0) {
    throw std::runtime_error("collective row " + std::to_string(row) + " did not complete");
  }
  return r.collectives[row];
}

// log2 of the smallest size from which generator `ring` is faster than generator `tree` at
// every larger size of their common sweep.
double ring_tree_crossover_log2(const nlohmann::json& metric, const RunResult& r) {
  const auto ring = metric.at("ring").get<uint32_t>(), tree = metric.at("tree").get<uint32_t>();
  std::map<int64_t, std::pair<double, double>> times;  // size -> (ring, tree)
  for (const CollectiveRow& row : r.collectives) {
    if (row.time_us <= 0) throw std::runtime_error("a collective size did not complete");
    if (row.generator == ring) times[row.size].first = row.time_us;
    if (row.generator == tree) times[row.size].second = row.time_us;
  }
  int64_t from = -1;
  for (const auto& [size, t] : times) {
    if (t.first <= 0 || t.second <= 0) continue;
    if (t.first < t.second) {
      if (from < 0) from = size;
    } else {
      from = -1;
    }
  }
  if (from < 0) throw std::runtime_error("ring never beats tree up to the largest size");
  return std::log2(static_cast<double>(from));
}

double measure(const nlohmann::json& metric, const RunResult& r) {
  const std::string name = metric.at("name").get<std::string>();
  if (name == "collective_time_us") return collective_row(metric, r).time_us;
  if (name == "collective_busbw") {
    return collective_row(metric, r).busbw / metric.value("divide_by", 1.0);
  }
  if (name == "ring_tree_crossover_log2") return ring_tree_crossover_log2(metric, r);
  if (name == "flow_fct_ps") return static_cast<double>(r.flows[flow_arg(metric, r)].fct().ps);
  if (name == "flow_goodput_bps") return r.flows[flow_arg(metric, r)].goodput_bps();
  if (name == "mean_queue_bytes") return mean_queue(metric, r);
  if (name == "mean_queue_delay_us") return mean_queue_delay_us(metric, r);
  if (name == "queue_delay_quantile_us") return queue_delay_quantile_us(metric, r);
  if (name == "jain_index_of_rates") {
    return jain_index(mean_rates(r, parse_time(metric.value("after", std::string("0us")))));
  }
  if (name == "rate_convergence_time_ps") return convergence_time(r);
  if (name == "port_utilization") {
    for (const PortRecord& p : r.ports) {
      if (p.node == metric.at("node").get<std::string>() &&
          p.port == metric.at("port").get<uint32_t>()) {
        return static_cast<double>(p.busy_time.ps) / static_cast<double>(r.last_event_time.ps);
      }
    }
    throw ScenarioError("metric.port", "no such port");
  }
  if (name == "xoff_sent") {
    int64_t n = 0;
    for (const PortRecord& p : r.ports) n += p.total(&PriorityCounters::pause_sent);
    return static_cast<double>(n);
  }
  if (name == "max_switch_queue_bytes") {
    int64_t m = 0;
    for (const PortRecord& p : r.ports) {
      if (p.switch_port) m = std::max(m, p.max_queue_bytes());
    }
    return static_cast<double>(m);
  }
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
    if (!f.completed)
      throw std::runtime_error("flow " + std::to_string(f.spec.id) + " did not complete");
    goodput.push_back(f.goodput_bps());
    first = std::min(first, f.spec.start);
    last = std::max(last, f.finish);
    bits += 8.0 * static_cast<double>(f.spec.size.count);
  }
  if (name == "jain_index") return jain_index(goodput);
  if (name == "aggregate_goodput_bps") return bits / (last - first).seconds();
  throw ScenarioError("metric.name",
                      "expected flow_fct_ps, flow_goodput_bps, mean_max_queue_bytes, "
                      "jain_index, aggregate_goodput_bps, collective_time_us, collective_busbw "
                      "or ring_tree_crossover_log2, found \"" +
                          name + "\"");
}

// Analytic references, computed from the same scenario the simulation ran.
double analytic(const std::string& name, const nlohmann::json& metric, const Fabric& fabric,
                const nlohmann::json& scenario, const RunResult& result) {
  const NicConfig nic = HostNic::read_config(scenario);
  const Topology& topo = fabric.topology();
  const TopologyLink& host_link = topo.links.front();
  if (name == "single_packet_round_trip") {
    const FlowSpec& f = fabric.flows().at(static_cast<size_t>(metric.value("flow", 0)));
    return static_cast<double>(unloaded_round_trip(topo, f, static_cast<int>(f.size.count)).ps);
  }
  if (name == "dctcp_queue_bound") {
    // DCTCP's queue peaks at K plus one packet per flow (SIGCOMM 2010 section 3.3): every flow
    // adds a packet in the round trip before the marks reach it.
    const RedMarking red = read_switch_config(scenario, 0).red_for(host_link.rate);
    const int frame = roce::data_frame(static_cast<int>(nic.mtu.count), false);
    return static_cast<double>(red.kmin + static_cast<int64_t>(fabric.flows().size()) * frame);
  }
  if (name == "timely_t_low_queue_delay_us" || name == "timely_t_high_queue_delay_us") {
    // The queueing delay at which flow 0's RTT (a full packet's unloaded round trip plus the
    // bottleneck's queueing delay) equals T_low or T_high.
    const CcConfig cc = read_cc_config(scenario);
    const Time t = name == "timely_t_low_queue_delay_us" ? cc.timely.t_low : cc.timely.t_high;
    const Time base =
        unloaded_round_trip(topo, fabric.flows().at(0), static_cast<int>(nic.mtu.count));
    return static_cast<double>((t - base).ps) / 1e6;
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
  if (name == "dcqcn_fixed_point_queue") {
    // The CoNEXT 2016 fluid model's fixed point for the scenario's own parameters: N flows
    // through the bottleneck, counting in the data frames the switch marks.
    const CcConfig choice = read_cc_config(scenario);
    if (choice.algorithm != CcAlgorithm::Dcqcn) {
      throw ScenarioError("nic.cc.algorithm", "the dcqcn_fixed_point_queue reference needs dcqcn");
    }
    const DcqcnConfig& cc = choice.dcqcn;
    const SwitchConfig sw = read_switch_config(scenario, 0);
    const RedMarking red = sw.red_for(host_link.rate);
    DcqcnFluidParams p;
    p.capacity_bps = static_cast<double>(host_link.rate.bps);
    p.flows = static_cast<int>(fabric.flows().size());
    p.packet_bytes = roce::data_frame(static_cast<int>(nic.mtu.count), false);
    p.kmin_bytes = static_cast<double>(red.kmin);
    p.kmax_bytes = static_cast<double>(red.kmax);
    p.pmax = red.pmax;
    p.g = cc.g();
    p.tau_s = cc.min_time_between_cnps.seconds();
    p.tau_prime_s = cc.dce_tcp_rtt.seconds();
    p.timer_s = cc.rpg_time_reset.seconds();
    p.byte_counter_bytes = static_cast<double>(cc.rpg_byte_reset);
    p.fast_recovery = cc.rpg_threshold;
    p.rate_ai_bps = static_cast<double>(cc.rpg_ai_rate.bps);
    return dcqcn_fixed_point(p).queue_bytes;
  }
  if (name == "ring_all_reduce_alpha_beta") {
    // T = base + 2(n-1) alpha + 2(n-1)/n S/B for one GPU per node: alpha is the unloaded
    // latency of one network step (proxy, PCIe both ways, the links of the path), B the
    // rank's RoCE goodput (or its PCIe rate if slower).
    const CollectiveSetup& setup = fabric.collectives();
    const CollectiveRow& row = collective_row(metric, result);
    const double n = row.ranks;
    const RoutingTable routing(topo);
    const int hops = routing.distance(topo.nic_of_gpu(static_cast<int>(row.gpus[0])),
                                      topo.nic_of_gpu(static_cast<int>(row.gpus[1])));
    const double alpha =
        (setup.nccl.net_step_latency + setup.gpu.pcie_latency * 2 + host_link.delay * hops)
            .seconds();
    const double payload = static_cast<double>(nic.mtu.count);
    const double ack_wire =
        (roce::ack_frame() + roce::kWireGapBytes) / static_cast<double>(nic.ack_every);
    const double goodput = static_cast<double>(host_link.rate.bps) * payload /
                           (payload + roce::kHeaderBytes + roce::kWireGapBytes + ack_wire);
    const double b = std::min(goodput, static_cast<double>(setup.gpu.nic_dma_rate().bps)) / 8;
    const double t = setup.nccl.base_latency.seconds() + 2 * (n - 1) * alpha +
                     2 * (n - 1) / n * static_cast<double>(row.size) / b;
    return t * 1e6;
  }
  if (name == "nccl_tuning_crossover_log2") {
    // Where NCCL 2.30.7's own tuning model (Simple protocol) starts preferring ring to tree
    // for the first collective's ranks and channels.
    const nccl::TuningInput input = tuning_input(fabric.collectives(), topo, 0);
    const int64_t bytes = nccl::crossover_bytes(input, nccl::Algorithm::Ring, nccl::Algorithm::Tree,
                                                nccl::Protocol::Simple);
    if (bytes < 0) throw std::runtime_error("the tuning model never prefers ring");
    return std::log2(static_cast<double>(bytes));
  }
  throw ScenarioError("reference.analytic",
                      "expected single_packet_round_trip, roce_goodput, "
                      "dynamic_threshold_steady_state, dcqcn_fixed_point_queue, "
                      "dctcp_queue_bound, timely_t_low_queue_delay_us, "
                      "timely_t_high_queue_delay_us, "
                      "ring_all_reduce_alpha_beta or nccl_tuning_crossover_log2, found \"" +
                          name + "\"");
}

std::filesystem::path cases_dir() {
  return std::filesystem::path(FABTWIN_SOURCE_DIR) / "validate";
}

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
  const nlohmann::json& baseline = r.raw("baseline");
  const nlohmann::json& report = r.raw("report");
  r.finish();

  Fabric fabric(doc);
  const RunResult result = fabric.run();
  o.metric = metric.at("name").get<std::string>();
  o.simulated = measure(metric, result);
  if (metric.value("ratio_to_baseline", false)) {
    if (!baseline.is_object())
      throw ScenarioError("baseline", "ratio_to_baseline needs a baseline run");
    std::vector<std::string> base_sets = sets;
    for (const auto& s : baseline.value("set", nlohmann::json::array()))
      base_sets.push_back(s.get<std::string>());
    Fabric base(
        load_scenario(case_file.parent_path() / c["scenario"].get<std::string>(), base_sets));
    const RunResult base_result = base.run();
    const double base_value = measure(metric, base_result);
    o.extras.push_back({o.metric + " (baseline)", base_value});
    o.extras.push_back({o.metric + " (this run)", o.simulated});
    o.simulated /= base_value;
    o.metric += " ratio";
  }
  for (const auto& extra : report.is_array() ? report : nlohmann::json::array()) {
    o.extras.push_back({extra.at("name").get<std::string>(), measure(extra, result)});
  }
  o.reference = reference.contains("analytic") ? analytic(reference["analytic"].get<std::string>(),
                                                          metric, fabric, doc.root, result)
                                               : reference.at("value").get<double>();
  o.source = reference.value("source", "");
  if (tolerance.contains("at_most") || tolerance.contains("at_least")) {
    o.bound = tolerance.contains("at_most") ? "at_most" : "at_least";
    o.relative = false;
    o.error = o.simulated - o.reference;
    o.passed = o.bound == "at_most" ? o.simulated <= o.reference : o.simulated >= o.reference;
    return o;
  }
  o.relative = tolerance.contains("relative");
  o.tolerance =
      o.relative ? tolerance["relative"].get<double>() : tolerance.at("absolute").get<double>();
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
    const std::filesystem::path file =
        std::filesystem::exists(named) ? named : std::filesystem::path(a);
    if (!std::filesystem::is_regular_file(file)) {
      std::vector<std::string> names;
      for (const auto& entry : std::filesystem::directory_iterator(cases_dir())) {
        if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
      }
      std::sort(names.begin(), names.end());
      std::string known;
      for (const std::string& n : names) known += " " + n;
      std::cerr << "fabtwin validate: no case named \"" << a << "\"; cases:" << known << "\n";
      return 2;
    }
    files.push_back(file);
  }
  std::printf("%-24s %-22s %16s %16s %10s %10s  %s\n", "case", "metric", "reference", "simulated",
              "error", "tolerance", "result");
  int failed = 0;
  for (const auto& f : files) {
    const ValidationOutcome o = run_validation_case(f);
    failed += o.passed ? 0 : 1;
    if (o.bound.empty()) {
      std::printf("%-24s %-22s %16.6g %16.6g %9.4f%s %9.4f%s  %s\n", o.name.c_str(),
                  o.metric.c_str(), o.reference, o.simulated, o.relative ? 100 * o.error : o.error,
                  o.relative ? "%" : " ", o.relative ? 100 * o.tolerance : o.tolerance,
                  o.relative ? "%" : " ", o.passed ? "pass" : "FAIL");
    } else {
      std::printf("%-24s %-22s %16.6g %16.6g %10s %10s  %s\n", o.name.c_str(), o.metric.c_str(),
                  o.reference, o.simulated, "", o.bound == "at_most" ? "<= ref" : ">= ref",
                  o.passed ? "pass" : "FAIL");
    }
    for (const auto& [label, value] : o.extras)
      std::printf("%26s %s = %.6g\n", "", label.c_str(), value);
  }
  std::printf("%zu passed, %d failed\n", files.size() - failed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace fabtwin
