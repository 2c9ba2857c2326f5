#include "sim/cli/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>

#include "models/cc/algorithm.h"
#include "models/cc/dcqcn_fluid_model.h"
#include "models/fabric/fabric.h"
#include "models/fabric/fluid_bottleneck.h"
#include "models/fabric/max_min_fair.h"
#include "models/fabric/metrics.h"
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
     {"fluid", ParamType::List, "{}",
      "{duration?, delay?, step?, sample?, after?}: integrate the DCQCN fluid model for the "
      "scenario's bottleneck (`fabtwin fluid` with these options) instead of simulating it; "
      "metrics: fluid_mean_queue_bytes, fluid_utilization, fluid_amplitude_bytes",
      "fabtwin"},
     {"tolerance", ParamType::List, "",
      "{relative | absolute} around the reference, or {at_most: true | at_least: true}",
      "fabtwin"}}};

double measure(const nlohmann::json& metric, const RunResult& r) {
  return measure_metric(metric.at("name").get<std::string>(), r, metric);
}

// The fluid model's trajectory for a case with a "fluid" object, integrated with its options as
// `fabtwin fluid` takes them, and summarized.
DcqcnTrajectorySummary fluid_summary(const nlohmann::json& options, const FabricSpec& spec) {
  static const std::set<std::string> kKeys{"duration", "delay", "step", "sample", "after"};
  for (const auto& [key, value] : options.items()) {
    if (!kKeys.count(key)) {
      throw ScenarioError("fluid." + key,
                          "unknown key; this object takes duration, delay, step, sample, after");
    }
  }
  FluidOptions o;
  auto time = [&](const std::string& key) -> std::optional<Time> {
    if (!options.contains(key)) return std::nullopt;
    const nlohmann::json& value = options.at(key);
    if (!value.is_string()) {
      throw ScenarioError("fluid." + key,
                          "expected a time like \"75ms\", found " + json_text(value));
    }
    try {
      return parse_time(value.get<std::string>());
    } catch (const std::exception& e) {
      throw ScenarioError("fluid." + key, e.what());
    }
  };
  o.duration = time("duration");
  o.delay = time("delay");
  o.step = time("step");
  o.sample = time("sample");
  o.after = time("after");
  const FluidBottleneck b = fluid_bottleneck(spec);
  const FluidSetup setup = fluid_setup(spec, b, o);
  return summarize(dcqcn_trajectory(setup.params), setup.params, setup.after.seconds());
}

// The summary figure a fluid case's metric names.
double measure_fluid(const nlohmann::json& metric, const DcqcnTrajectorySummary& s) {
  const std::string name = metric.at("name").get<std::string>();
  if (name == "fluid_mean_queue_bytes") return s.mean_queue_bytes;
  if (name == "fluid_utilization") return s.utilization;
  if (name == "fluid_amplitude_bytes") return s.amplitude_bytes;
  throw ScenarioError("metric.name",
                      "a fluid case measures fluid_mean_queue_bytes, fluid_utilization or "
                      "fluid_amplitude_bytes, found \"" +
                          name + "\"");
}

// The round trip of one packet of `payload` bytes of flow `f` and its ACK through an idle
// fabric of one link rate. Every link costs its propagation delay and every switch its
// port-to-port latency; a store-and-forward switch sends a frame on only once all of it is in,
// so each link costs the frame's wire time too, while cut-through switches pass it on as it
// arrives, so its wire time counts once. The packet is the first of its message: a WRITE's
// carries the RETH, a SEND's does not.
Time unloaded_round_trip(const FabricSpec& spec, const FlowSpec& f, int payload) {
  const Link& link = spec.topology.links.front();
  const int hops = spec.routes.distance(f.src, f.dst);
  const auto one_way = [&](int frame) {
    const Time wire = roce::wire_time(frame, link.rate);
    return (spec.switches.cut_through ? wire : wire * hops) + link.delay * hops +
           spec.switches.port_to_port_latency * (hops - 1);
  };
  return one_way(roce::data_frame(payload, f.verb == Verb::Write)) + one_way(roce::ack_frame());
}

// The 5-tuple hashes of each flow's send and receive queue pairs (data one way, ACKs the
// other), drawn as the NICs draw them: each host's stream (the run seed and the host's
// component id) gives one UDP source port per queue pair it opens, in flow order, first the
// sender's and then the receiver's (HostNic::add_send_qp and add_receive_qp, called by Fabric
// in that order).
std::vector<std::pair<uint32_t, uint32_t>> flow_hashes(const FabricSpec& spec) {
  std::vector<Rng> streams;
  for (int h = 0; h < spec.topology.hosts; ++h) streams.emplace_back(spec.run.seed, h);
  std::vector<std::pair<uint32_t, uint32_t>> hashes;
  for (const FlowSpec& f : spec.flows) {
    const auto src = static_cast<uint32_t>(f.src), dst = static_cast<uint32_t>(f.dst);
    const auto data_port = static_cast<uint16_t>(49152 + streams[f.src].below(16384));
    const auto ack_port = static_cast<uint16_t>(49152 + streams[f.dst].below(16384));
    hashes.emplace_back(roce_flow_hash(src, dst, data_port), roce_flow_hash(dst, src, ack_port));
  }
  return hashes;
}

// Goodput of each of the scenario's flows (all starting together) in the fluid max-min model,
// each flow's data on the ECMP path its hash takes when switch v salts with salt(v), and its
// ACKs on the reverse ECMP path of its receiver's queue pair. A goodput bit costs its frame's
// share of wire bits (headers, preamble, gap) on the data path, and the ACKs' wire bits per
// payload bit on the ACK path; every directed link offers its line rate.
std::vector<double> ecmp_fluid_goodputs(const FabricSpec& spec,
                                        const std::vector<std::pair<uint32_t, uint32_t>>& hashes,
                                        const std::function<uint32_t(int)>& salt) {
  const Topology& topo = spec.topology;
  std::vector<uint32_t> first_port(topo.nodes.size() + 1, 0);
  for (size_t v = 0; v < topo.nodes.size(); ++v) {
    first_port[v + 1] = first_port[v] + static_cast<uint32_t>(topo.nodes[v].ports);
  }
  std::vector<double> capacity(first_port.back(), 0.0);
  for (const Link& l : topo.links) {
    capacity[first_port[l.a] + l.a_port] = static_cast<double>(l.rate.bps);
    capacity[first_port[l.b] + l.b_port] = static_cast<double>(l.rate.bps);
  }
  const double payload = static_cast<double>(spec.nic.mtu.count);
  const double data_weight = (payload + roce::kHeaderBytes + roce::kWireGapBytes) / payload;
  const double ack_weight =
      (std::max(roce::ack_frame(), roce::kMinFrameBytes) + roce::kWireGapBytes) /
      (payload * static_cast<double>(spec.nic.ack_every));
  std::vector<FlowPath> paths;
  std::vector<double> bits;
  for (size_t i = 0; i < spec.flows.size(); ++i) {
    const FlowSpec& f = spec.flows[i];
    if (f.start != spec.flows.front().start) {
      throw ScenarioError("traffic", "the ECMP max-min reference needs flows that start together");
    }
    FlowPath path;
    for (const auto& [node, port] :
         ecmp_path(topo, spec.routes, f.src, f.dst, hashes[i].first, salt)) {
      path.emplace_back(first_port[node] + static_cast<uint32_t>(port), data_weight);
    }
    for (const auto& [node, port] :
         ecmp_path(topo, spec.routes, f.dst, f.src, hashes[i].second, salt)) {
      path.emplace_back(first_port[node] + static_cast<uint32_t>(port), ack_weight);
    }
    paths.push_back(std::move(path));
    bits.push_back(8.0 * static_cast<double>(f.size.count));
  }
  const std::vector<double> done = fluid_completion_times(paths, bits, capacity);
  std::vector<double> goodput;
  for (size_t i = 0; i < done.size(); ++i) goodput.push_back(bits[i] / done[i]);
  return goodput;
}

// The median of every flow's fluid max-min goodput over `trials` draws of random per-switch
// ECMP salts, pooled: what hash collisions give a flow of such a permutation, whatever the hash.
double ecmp_monte_carlo_goodput_median(const FabricSpec& spec, int trials) {
  const auto hashes = flow_hashes(spec);
  std::vector<double> pooled;
  for (int t = 0; t < trials; ++t) {
    Rng rng(spec.run.seed, 0xEC3B0000ull + static_cast<uint64_t>(t));
    std::vector<uint32_t> salts(spec.topology.nodes.size());
    for (uint32_t& s : salts) s = static_cast<uint32_t>(rng.next());
    const std::vector<double> g =
        ecmp_fluid_goodputs(spec, hashes, [&](int v) { return salts[v]; });
    pooled.insert(pooled.end(), g.begin(), g.end());
  }
  return percentile(pooled, 50);
}

// Analytic references, computed from the same scenario the simulation ran.
double analytic(const std::string& name, const nlohmann::json& metric, const FabricSpec& spec,
                const RunResult& result) {
  const NicConfig& nic = spec.nic;
  const Topology& topo = spec.topology;
  const Link& host_link = topo.links.front();
  if (name == "single_packet_round_trip") {
    const FlowSpec& f = spec.flows.at(static_cast<size_t>(metric.value("flow", 0)));
    // The message's first packet leaves nic.message_overhead after its start.
    return static_cast<double>(
        (nic.message_overhead + unloaded_round_trip(spec, f, static_cast<int>(f.size.count))).ps);
  }
  if (name == "send_rnr_retry") {
    // Two one-packet SENDs posted together on one path with one receive WQE posted, reposted
    // only after the second arrives: the second leaves one data frame after the first and queues
    // behind it at every hop, so it arrives one frame time after the first (store and forward
    // over `hops` links: hops x (D + L) + D). Its RNR NAK goes back (hops x (A + L)), the
    // requester waits min_rnr_timer, and the SEND's own round trip follows.
    if (spec.flows.size() != 2)
      throw ScenarioError("reference.analytic", "send_rnr_retry needs exactly two flows");
    const FlowSpec& f = spec.flows[1];
    for (const FlowSpec& g : spec.flows) {
      if (g.verb != Verb::Send || g.src != f.src || g.dst != f.dst || g.start != Time{} ||
          g.size.count > nic.mtu.count)
        throw ScenarioError("reference.analytic",
                            "send_rnr_retry needs one-packet SENDs on one path, starting at 0");
    }
    const int hops = spec.routes.distance(f.src, f.dst);
    const Time data =
        roce::wire_time(roce::data_frame(static_cast<int>(f.size.count), false), host_link.rate);
    const Time ack = roce::wire_time(roce::ack_frame(), host_link.rate);
    const Time first_arrives = (data + host_link.delay) * hops;
    if (nic.receive_queue_depth != 1 || nic.receive_repost_delay <= data)
      throw ScenarioError("reference.analytic",
                          "send_rnr_retry needs nic.receive_queue_depth 1 and a repost delay "
                          "longer than one frame time");
    const Time rnr_nak_back = (ack + host_link.delay) * hops;
    return static_cast<double>((first_arrives + data + rnr_nak_back + nic.min_rnr_timer +
                                unloaded_round_trip(spec, f, static_cast<int>(f.size.count)))
                                   .ps);
  }
  if (name == "dctcp_queue_bound") {
    // DCTCP's queue peaks at K plus one packet per flow (SIGCOMM 2010 section 3.3): every flow
    // adds a packet in the round trip before the marks reach it.
    const RedMarking red = spec.switches.red_for(host_link.rate);
    const int frame = roce::data_frame(static_cast<int>(nic.mtu.count), false);
    return static_cast<double>(red.kmin + static_cast<int64_t>(spec.flows.size()) * frame);
  }
  if (name == "timely_t_low_queue_delay_us" || name == "timely_t_high_queue_delay_us") {
    // The queueing delay at which flow 0's RTT (a full packet's unloaded round trip plus the
    // bottleneck's queueing delay) equals T_low or T_high.
    const TimelyConfig& timely = nic.cc.timely;
    const Time t = name == "timely_t_low_queue_delay_us" ? timely.t_low : timely.t_high;
    const Time base = unloaded_round_trip(spec, spec.flows.at(0), static_cast<int>(nic.mtu.count));
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
    const double alpha = spec.switches.mmu.egress_alpha;
    const double pool = static_cast<double>(result.buffers.at(0).shared_pool);
    const double n = static_cast<double>(metric.at("ports").size());
    return alpha * pool / (1 + alpha * n);
  }
  if (name == "dcqcn_fixed_point_queue") {
    // The CoNEXT 2016 fluid model's fixed point for the scenario's own bottleneck: every flow
    // into one receiver, counting in the data frames the switch marks.
    return dcqcn_fixed_point(fluid_bottleneck(spec).model).queue_bytes;
  }
  if (name == "ring_all_reduce_alpha_beta") {
    // T = base + 2(n-1) alpha + 2(n-1)/n S/B for one GPU per node: alpha is the unloaded
    // latency of one network step (proxy, PCIe both ways, the links of the path), B the
    // rank's RoCE goodput (or its PCIe rate if slower).
    const CollectiveSetup& setup = spec.collectives;
    const int64_t row_index = metric.value("row", int64_t{0});
    const CollectiveRow& row = completed_collective(result, row_index);
    const double n = row.ranks;
    const int hops = spec.routes.distance(topo.nic_of_gpu(static_cast<int>(row.gpus[0])),
                                          topo.nic_of_gpu(static_cast<int>(row.gpus[1])));
    const double alpha = (setup.ops.at(static_cast<size_t>(row_index)).net_step_latency +
                          setup.gpu.pcie_latency * 2 + host_link.delay * hops)
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
  if (name == "ecmp_max_min_goodput_p50") {
    // The flows on the paths the switches' own ECMP hashes pick, shared max-min fairly.
    return percentile(ecmp_fluid_goodputs(spec, flow_hashes(spec), ecmp_salt), 50);
  }
  if (name == "ecmp_monte_carlo_goodput_p50") {
    // The same over random switch salts: what hash collisions give such a permutation on
    // average.
    return ecmp_monte_carlo_goodput_median(spec, 1000);
  }
  if (name == "nccl_tuning_crossover_log2") {
    // Where NCCL 2.30.7's own tuning model (Simple protocol) starts preferring ring to tree
    // for the first collective's ranks and channels.
    const nccl::TuningInput input = tuning_input(spec.collectives, topo, 0);
    const int64_t bytes = nccl::crossover_bytes(input, nccl::Algorithm::Ring, nccl::Algorithm::Tree,
                                                nccl::Protocol::Simple);
    if (bytes < 0) throw std::runtime_error("the tuning model never prefers ring");
    return std::log2(static_cast<double>(bytes));
  }
  throw ScenarioError("reference.analytic",
                      "expected single_packet_round_trip, send_rnr_retry, roce_goodput, "
                      "dynamic_threshold_steady_state, dcqcn_fixed_point_queue, "
                      "dctcp_queue_bound, timely_t_low_queue_delay_us, "
                      "timely_t_high_queue_delay_us, "
                      "ring_all_reduce_alpha_beta, nccl_tuning_crossover_log2, "
                      "ecmp_max_min_goodput_p50 or ecmp_monte_carlo_goodput_p50, found \"" +
                          name + "\"");
}

// Compares o.simulated with o.reference under the case's tolerance.
ValidationOutcome judge(ValidationOutcome o, const nlohmann::json& tolerance) {
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
  const nlohmann::json& fluid = r.raw("fluid");
  r.finish();

  if (fluid.is_object()) {
    // The fluid model stands in for the simulator: no run, the reference from the same spec.
    const FabricSpec spec = FabricSpec::resolve(doc);
    o.metric = metric.at("name").get<std::string>();
    const DcqcnTrajectorySummary summary = fluid_summary(fluid, spec);
    o.simulated = measure_fluid(metric, summary);
    for (const auto& extra : report.is_array() ? report : nlohmann::json::array()) {
      o.extras.push_back({extra.at("name").get<std::string>(), measure_fluid(extra, summary)});
    }
    o.reference = reference.contains("analytic")
                      ? analytic(reference["analytic"].get<std::string>(), metric, spec, {})
                      : reference.at("value").get<double>();
    o.source = reference.value("source", "");
    return judge(o, tolerance);
  }

  Fabric fabric(FabricSpec::resolve(doc));
  const RunResult result = fabric.run();
  o.metric = metric.at("name").get<std::string>();
  o.simulated = measure(metric, result);
  if (metric.value("ratio_to_baseline", false)) {
    if (!baseline.is_object())
      throw ScenarioError("baseline", "ratio_to_baseline needs a baseline run");
    std::vector<std::string> base_sets = sets;
    for (const auto& s : baseline.value("set", nlohmann::json::array()))
      base_sets.push_back(s.get<std::string>());
    Fabric base(FabricSpec::resolve(
        load_scenario(case_file.parent_path() / c["scenario"].get<std::string>(), base_sets)));
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
                                                          metric, fabric.spec(), result)
                                               : reference.at("value").get<double>();
  o.source = reference.value("source", "");
  return judge(o, tolerance);
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
