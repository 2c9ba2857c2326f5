#include "models/fabric/fabric_spec.h"

#include <set>
#include <stdexcept>

#include "models/cc/algorithm.h"
#include "models/fabric/memory_estimate.h"
#include "models/fabric/run_cost.h"
#include "models/net/roce_framing.h"
#include "models/nic/queue_pair.h"
#include "models/traffic/traffic.h"

namespace fabtwin {

namespace {

const BoundParams<RunConfig> kRunParams{
    "run",
    "run",
    "Run control",
    {
        BoundParams<RunConfig>::field(
            &RunConfig::end,
            {"end", ParamType::Time, "\"1s\"",
             "simulated time limit; a run also stops as soon as no traffic is left", "fabtwin"}),
        BoundParams<RunConfig>::field(
            &RunConfig::seed,
            {"seed", ParamType::Integer, "1",
             "seed of every random stream (ECMP source ports, traffic generators)", "fabtwin",
             "0.."}),
        BoundParams<RunConfig>::field(
            &RunConfig::threads,
            {"threads", ParamType::Integer, "0",
             "threads (partitions of the fabric) to simulate on; 0 = every hardware thread. "
             "Results are identical for any number (--threads overrides)",
             "fabtwin", "0..1024"}),
        BoundParams<RunConfig>::field(
            &RunConfig::partitions,
            {"partitions", ParamType::Integer, "0",
             "partitions of the fabric, each running its events for one window at a time: at "
             "least this many and at least one per thread. 0 = two per thread on a GPU fabric "
             "(where it has the switches), and as the fabric's size asks: one "
             "per 1,024 of the partitioner's weight (a switch's ports plus two per host), so "
             "that a partition's switches, ports and NICs stay in a core's caches for a whole "
             "window; a k=8 fat-tree stays whole, a k=16 one runs as 7 partitions. Taken only "
             "where the windows stay at least 50ns long. Results are identical for any number",
             "fabtwin", "0..4096"}),
        BoundParams<RunConfig>::custom(
            {"on_deadlock", ParamType::Choice, "\"stop\"",
             "what a PFC deadlock found by the detector (fabric.deadlock) does: stop the run "
             "there (stop reason \"deadlock\"; PFC refreshes would otherwise keep the dead fabric "
             "going until run.end), or continue to the end",
             "fabtwin", "stop|continue"},
            [](ParamReader& r, RunConfig& c) {
              c.stop_on_deadlock = r.choice("on_deadlock") == "stop";
            }),
        BoundParams<RunConfig>::custom(
            {"partitioner", ParamType::Choice, "\"metis\"",
             "how the fabric is cut into partitions for threads or MPI ranks: metis (METIS's "
             "k-way graph partitioner over the switch graph, edges weighted by link counts; the "
             "breadth-first cut when fabtwin was built without METIS) or bfs (contiguous runs of "
             "a breadth-first order of the switches). Both balance the switches' ports plus two "
             "per host; only wall-clock figures depend on the choice, never results",
             "fabtwin; Karypis and Kumar 1998 (METIS)", "bfs|metis"},
            [](ParamReader& r, RunConfig& c) {
              c.partitioner = partitioner_from_name(r.choice("partitioner"));
            }),
        BoundParams<RunConfig>::field(
            &RunConfig::bursts,
            {"bursts", ParamType::Boolean, "true",
             "run the events of each window (the shortest link delay, and on a GPU fabric the "
             "PCIe latency, where that is at least 50ns) switch by switch, NIC by NIC and GPU "
             "node by GPU node, each one's in their order, so that its state stays in a core's "
             "first-level cache for a burst of events instead of one. Only wall-clock figures "
             "depend on it, never results",
             "fabtwin"}),
    }};

const BoundParams<OutputConfig> kOutputParams{
    "output",
    "output",
    "Result files",
    {
        BoundParams<OutputConfig>::custom(
            {"hdf5", ParamType::Text, "(none)",
             "HDF5 result file, relative to the working directory (--out overrides)", "fabtwin"},
            [](ParamReader& r, OutputConfig& c) {
              if (r.has("hdf5")) c.hdf5 = r.text("hdf5");
            }),
        BoundParams<OutputConfig>::field(
            &OutputConfig::rate_sample_interval,
            {"rate_sample_interval", ParamType::Time, "\"10us\"",
             "period of the per-QP congestion-control traces (rate, target, alpha) when nic.cc "
             "is on; \"0us\" turns them off, otherwise at least 1ns",
             "fabtwin"}),
        BoundParams<OutputConfig>::field(
            &OutputConfig::queue_sample_interval,
            {"queue_sample_interval", ParamType::Time, "\"10us\"",
             "period of the per-port queue-depth samples; \"0us\" turns them off, otherwise at "
             "least 1ns",
             "fabtwin"}),
        BoundParams<OutputConfig>::field(
            &OutputConfig::collective_timeline,
            {"collective_timeline", ParamType::Boolean, "true",
             "record every step and message of the collectives (HDF5 /collectives/steps and "
             "transfers, --trace); false keeps only the nccl-tests rows, for long sweeps on many "
             "GPUs",
             "fabtwin"}),
    }};

// `hw` belongs to the hardware backend (hw/run/hw_config.h): the simulator ignores it, and the
// commands that run a scenario read it strictly there.
const std::set<std::string> kSections{"topology", "fabric",      "nic",     "routing",    "traffic",
                                      "gpu",      "nccl",        "run",     "output",     "events",
                                      "hw",       "description", "$schema", "calibration"};

// `calibration`: where a calibrated parameter file came from (fabtwin calibrate writes it beside
// the fitted values); provenance for the reader, not simulated.
const ParamGroup kCalibrationParams{
    "calibration",
    "calibration",
    "Provenance of calibrated parameters (written by fabtwin calibrate; not simulated)",
    {{"fabtwin_version", ParamType::Text, "\"\"", "fabtwin version that fitted the values",
      "fabtwin calibrate"},
     {"date", ParamType::Text, "\"\"", "date of the fit (UTC, YYYY-MM-DD)", "fabtwin calibrate"},
     {"cases", ParamType::List, "[]",
      "each measurement fitted to: label, file, its SHA-256, source, scenario, cc, nodes, ranks",
      "fabtwin calibrate"},
     {"set", ParamType::List, "[]", "the --set overrides applied to every scenario",
      "fabtwin calibrate"},
     {"fit_slice", ParamType::Text, "\"\"", "the slice of measured rows fitted on",
      "fabtwin calibrate"},
     {"held_out_slice", ParamType::Text, "\"\"", "the slice validated on", "fabtwin calibrate"},
     {"weights", ParamType::List, "{}", "weight of each metric family in the objective",
      "fabtwin calibrate"},
     {"fitted", ParamType::List, "{}",
      "each fitted parameter: value, initial value, range, standard error, status",
      "fabtwin calibrate"},
     {"not_identified", ParamType::List, "{}",
      "parameters the measurements could not identify, with the reason", "fabtwin calibrate"},
     {"objective", ParamType::List, "{}", "objective before and after, and the method",
      "fabtwin calibrate"},
     {"mean_abs_relative_error", ParamType::List, "{}",
      "mean |relative error| per family after the fit, in_sample and held_out",
      "fabtwin calibrate"}}};

const ParamGroup kFabricParams{"fabric",
                               "fabric",
                               "Fabric sections",
                               {{"link", ParamType::List, "{}", "see fabric.link", "fabtwin"},
                                {"switch", ParamType::List, "{}", "see fabric.switch", "fabtwin"},
                                {"pfc", ParamType::List, "{}", "see fabric.pfc", "fabtwin"},
                                {"ecn", ParamType::List, "{}", "see fabric.ecn", "fabtwin"},
                                {"qos", ParamType::List, "{}", "see fabric.qos", "fabtwin"},
                                {"deadlock", ParamType::List, "{}", "fabric.deadlock", "fabtwin"}}};

const nlohmann::json& section(const nlohmann::json& root, const char* key) {
  static const nlohmann::json none;
  return root.is_object() && root.contains(key) ? root[key] : none;
}

void check_sections(const nlohmann::json& root) {
  for (const auto& [key, value] : root.items()) {
    if (!kSections.count(key)) {
      throw ScenarioError(key,
                          "unknown section; a scenario has topology, fabric, nic, routing, "
                          "traffic, gpu, nccl, run, output, events, hw (and extends, description, "
                          "calibration, $schema)");
    }
  }
  if (root.contains("description") && !root["description"].is_string()) {
    throw ScenarioError("description", "expected text, found " + json_text(root["description"]));
  }
  if (root.contains("calibration")) {
    if (!root["calibration"].is_object()) {
      throw ScenarioError("calibration",
                          "expected an object, found " + json_text(root["calibration"]));
    }
    ParamReader calibration(root["calibration"], "calibration", kCalibrationParams);
    for (const Param& p : kCalibrationParams.params) calibration.raw(p.key);
    calibration.finish();
  }
  ParamReader fabric(section(root, "fabric"), "fabric", kFabricParams);
  for (const char* key : {"link", "switch", "pfc", "ecn", "qos", "deadlock"}) fabric.raw(key);
  fabric.finish();
}

// The largest frame a port must carry and that the automatic PFC headroom allows for: an
// Ethernet MTU given in fabric.link.mtu (the IP packet, plus Ethernet header and FCS), or else
// the NICs' largest data frame. A RoCE payload that does not fit the MTU is an error.
int64_t port_frame(const Topology& topology, const NicConfig& nic) {
  const int64_t data_frame = roce::data_frame(static_cast<int>(nic.mtu.count), true);
  if (topology.ethernet_mtu == 0) return data_frame;
  const int64_t frame = topology.ethernet_mtu + roce::kEthernetBytes;
  if (data_frame > frame) {
    throw ScenarioError("fabric.link.mtu",
                        "expected an Ethernet MTU of at least " +
                            format_bytes(Bytes{data_frame - roce::kEthernetBytes}) +
                            " for RoCE payloads of nic.mtu = " + format_bytes(nic.mtu) +
                            " (with their IP, UDP, BTH, RETH and ICRC headers), found " +
                            format_bytes(Bytes{topology.ethernet_mtu}));
  }
  return frame;
}

// Every switch must have buffer left for the shared pool after what it sets aside (reserves and
// the headroom of each lossless group, which depends on each port's link).
void check_buffer_set_aside(const Topology& topology, const SwitchConfig& config) {
  std::vector<std::vector<int64_t>> headroom(topology.nodes.size());
  for (size_t n = 0; n < topology.nodes.size(); ++n) headroom[n].resize(topology.nodes[n].ports);
  for (const Link& link : topology.links) {
    const int64_t bytes = config.port_headroom(link.rate, link.delay);
    headroom[link.a][link.a_port] = bytes;
    headroom[link.b][link.b_port] = bytes;
  }
  for (size_t n = 0; n < topology.nodes.size(); ++n) {
    if (topology.nodes[n].kind != NodeKind::Switch) continue;
    const int64_t set_aside = SharedBuffer::set_aside(config.mmu, headroom[n]);
    if (set_aside >= config.mmu.buffer) {
      throw ScenarioError("fabric.switch.buffer",
                          "expected more than the " + format_bytes(Bytes{set_aside}) + " that " +
                              topology.nodes[n].name + " sets aside (reserve x 8 groups x " +
                              std::to_string(headroom[n].size()) +
                              " ports, plus headroom per lossless group), found " +
                              format_bytes(Bytes{config.mmu.buffer}));
    }
  }
}

// fabric.ecn.{kmin,kmax,pmax} mark at the ports of speeds that fabric.ecn.by_rate does not
// list; written while by_rate lists every switch port's speed, they would do nothing.
void check_ecn_not_shadowed(const nlohmann::json& root, const Topology& topology) {
  const nlohmann::json& ecn = section(section(root, "fabric"), "ecn");
  const nlohmann::json& by_rate = section(ecn, "by_rate");
  if (!by_rate.is_object() || by_rate.empty()) return;
  std::map<int64_t, std::string> listed;  // rate -> its key as written
  for (const auto& [text, settings] : by_rate.items()) listed[parse_rate(text).bps] = text;
  std::set<int64_t> speeds;
  for (const Link& l : topology.links) speeds.insert(l.rate.bps);
  std::string keys;
  for (const int64_t speed : speeds) {
    const auto it = listed.find(speed);
    if (it == listed.end()) return;  // a port speed the default marking still serves
    keys += (keys.empty() ? "" : ", ") + std::string("fabric.ecn.by_rate.") + it->second;
  }
  for (const char* key : {"kmin", "kmax", "pmax"}) {
    if (ecn.contains(key)) {
      throw ScenarioError(std::string("fabric.ecn.") + key,
                          "shadowed by " + keys +
                              ", which set the marking of every switch port (no port runs at "
                              "another speed); set " +
                              key + " there, or remove one of the two");
    }
  }
}

// A flow's packets are numbered by the model's 32-bit PSNs: a flow may not need more.
void check_flow_sizes(const std::vector<FlowSpec>& flows, const NicConfig& nic) {
  for (const FlowSpec& f : flows) {
    if (packet_count(f.size.count, nic.mtu.count) <= kMaxFlowPackets) continue;
    throw ScenarioError("traffic[" + std::to_string(f.generator) + "]",
                        "expected flows of at most " + std::to_string(kMaxFlowPackets) +
                            " packets of nic.mtu = " + format_bytes(nic.mtu) + ", found flow " +
                            std::to_string(f.id) + " of " + format_bytes(f.size));
  }
}

// A priority rewrite moves a frame to its new priority by rewriting its DSCP (switches classify
// by DSCP at every hop), so some DSCP must map to that priority. It may not make a lossless frame
// lossy: the frame would be admitted on a lossless ingress group yet could be dropped at a lossy
// egress queue.
void check_rewrites_classified(const RoutingPolicy& routing, const SwitchConfig& config) {
  for (size_t i = 0; i < routing.rewrites.size(); ++i) {
    const int to = routing.rewrites[i].to;
    const int from = routing.rewrites[i].priority;
    if (config.pfc && config.mmu.lossless[from] && !config.mmu.lossless[to]) {
      throw ScenarioError("routing.priority_rewrite[" + std::to_string(i) + "].to",
                          "expected a lossless priority (fabric.pfc.lossless_priorities) for "
                          "lossless priority " +
                              std::to_string(from) + ", found lossy priority " +
                              std::to_string(to));
    }
    const auto& map = config.dscp_to_priority;
    if (std::find(map.begin(), map.end(), to) == map.end()) {
      throw ScenarioError("routing.priority_rewrite[" + std::to_string(i) + "].to",
                          "expected a priority some DSCP maps to in fabric.qos.dscp_to_priority "
                          "(the rewrite sets that DSCP), found " +
                              std::to_string(to) + ", which no DSCP maps to");
    }
  }
}

// Connections of every collective size (NVLink or network, with the NICs they use), the
// latency of the credits that cross the network back to a sender, and the barrier between
// sizes. The NICs' queue pairs are added when a Fabric is built. A path costs each link's delay
// and an ACK's wire time, and each switch its port-to-port latency (`switch_latency`).
void resolve_connections(CollectiveSetup& setup, const Topology& topology,
                         const RoutingTable& routes, Time switch_latency) {
  Time hop{};
  for (const Link& l : topology.links) {
    hop = std::max(hop, l.delay + roce::wire_time(roce::ack_frame(), l.rate));
  }
  auto path = [&](int src_host, int dst_host) {
    const int links = std::max(0, routes.distance(src_host, dst_host));
    return hop * links + switch_latency * std::max(0, links - 1) + setup.gpu.pcie_latency;
  };
  for (const CollectiveOp& op : setup.ops) {
    const CollectiveSpec& spec = setup.specs[op.spec];
    nccl::Plan plan;
    try {
      plan = nccl::make_plan(op.plan, [](int) { return false; });
    } catch (const std::length_error& e) {
      throw ScenarioError("traffic[" + std::to_string(spec.generator) + "]",
                          std::string(e.what()) + " (size " + format_bytes(Bytes{op.size}) + ")");
    }
    for (const nccl::Connection& c : plan.connections) {
      const auto key = std::make_tuple(op.spec, c.src, c.dst, c.channel);
      if (setup.connection_index.count(key)) continue;
      setup.connection_index[key] = static_cast<uint32_t>(setup.connections.size());
      CollectiveConnection conn;
      conn.spec = op.spec;
      conn.src_rank = c.src;
      conn.dst_rank = c.dst;
      conn.channel = c.channel;
      const int src_gpu = spec.gpus[c.src], dst_gpu = spec.gpus[c.dst];
      if (topology.node_of_gpu(src_gpu) == topology.node_of_gpu(dst_gpu)) {
        conn.transport = CollectiveTransport::NvLink;
      } else {
        conn.transport = CollectiveTransport::Net;
        conn.src_host = topology.nic_of_gpu(src_gpu);
        conn.dst_host = topology.nic_of_gpu(dst_gpu);
        conn.credit_latency = path(conn.dst_host, conn.src_host);
      }
      setup.connections.push_back(std::move(conn));
    }
  }
  for (uint32_t s = 0; s < setup.specs.size(); ++s) {
    const std::vector<int>& nodes = setup.spec_nodes[s];
    Time latency = setup.nccl.nvlink_step_latency;
    const int first = nodes.front() * topology.nics_per_node;
    for (int v : nodes) {
      if (v != nodes.front()) latency = std::max(latency, path(first, v * topology.nics_per_node));
    }
    setup.barrier_latency.push_back(latency);
  }
}

}  // namespace

std::vector<const ParamGroup*> all_param_groups() {
  std::vector<const ParamGroup*> groups{&kTopologyParams, &kGraphSwitchParams, &kGraphHostParams,
                                        &kGraphLinkParams, &kLinkParams};
  for (const ParamGroup* g : switch_param_groups()) groups.push_back(g);
  groups.push_back(&deadlock_params());
  groups.push_back(&HostNic::params());
  groups.push_back(&receiver_params().group());
  for (const ParamGroup* g : cc_param_groups()) groups.push_back(g);
  groups.push_back(&kRoutingParams);
  groups.push_back(&kStaticRouteParams);
  groups.push_back(&kPriorityRewriteParams);
  groups.push_back(&kStrategyRuleParams);
  groups.push_back(&adaptive_routing_params());
  groups.push_back(&kLinkEventParams);
  for (const ParamGroup* g : traffic_param_groups()) groups.push_back(g);
  groups.push_back(&kCollectiveParams);
  for (const ParamGroup* g : collective_param_groups()) groups.push_back(g);
  groups.push_back(&kRunParams.group());
  groups.push_back(&kOutputParams.group());
  groups.push_back(&kCalibrationParams);
  return groups;
}

FabricSpec FabricSpec::resolve(const ScenarioDocument& doc) {
  const nlohmann::json& root = doc.root;
  check_sections(root);
  FabricSpec spec;
  spec.scenario_text = root.dump(2);
  spec.scenario_file = doc.file.string();
  spec.run = kRunParams.read(section(root, "run"));
  spec.output = kOutputParams.read(section(root, "output"));

  // A fabric too large for the machine is refused before it is built.
  spec.topology =
      read_topology(root, doc.dir, [](const TopologySize& size) { check_fits_in_memory(size); });
  spec.routing = RoutingPolicy::read(section(root, "routing"), spec.topology);
  spec.routes = compute_routes(spec.topology, spec.routing,
                               std::vector<bool>(spec.topology.links.size(), true));
  LinkSchedule schedule =
      plan_link_schedule(spec.topology, spec.routing, spec.routes,
                         read_link_events(section(root, "events"), spec.topology));
  spec.events = std::move(schedule.events);
  spec.route_updates = std::move(schedule.updates);
  spec.route_epochs = std::move(schedule.epochs);
  spec.ttl_can_expire = spec.routing.algorithm == RoutingAlgorithm::Static ||
                        spec.routing.ttl <= schedule.longest_route;

  NicConfig& nic = spec.nic;
  nic = HostNic::read_config(root);
  spec.switches = read_switch_config(root, port_frame(spec.topology, nic));
  check_buffer_set_aside(spec.topology, spec.switches);
  check_ecn_not_shadowed(root, spec.topology);
  {
    // Markings for speeds no link runs at are never used: the spec keeps what a run uses (a
    // sweep over such a key is then found shadowed, same_resolution).
    std::set<int64_t> speeds;
    for (const Link& l : spec.topology.links) speeds.insert(l.rate.bps);
    std::erase_if(spec.switches.red_by_rate,
                  [&](const auto& entry) { return !speeds.count(entry.first); });
  }
  check_rewrites_classified(spec.routing, spec.switches);
  spec.deadlock = read_deadlock_config(root);
  spec.switches.queue_sample_interval = spec.output.queue_sample_interval;
  nic.dscp_to_priority = spec.switches.dscp_to_priority;
  nic.pfc = spec.switches.pfc;
  nic.lossless = spec.switches.mmu.lossless;
  nic.pause_quanta = spec.switches.pause_quanta;
  for (size_t i = 0; i < nic.rx_stall_hosts.size(); ++i) {
    if (nic.rx_stall_hosts[i] >= spec.topology.hosts) {
      throw ScenarioError("nic.rx_stall.hosts[" + std::to_string(i) + "]",
                          "expected a host index below " + std::to_string(spec.topology.hosts) +
                              ", found " + std::to_string(nic.rx_stall_hosts[i]));
    }
  }
  nic.auto_refresh = spec.switches.auto_refresh;
  nic.pause_refresh = spec.switches.pause_refresh;
  nic.watchdog = spec.switches.watchdog;
  nic.watchdog.enabled = nic.watchdog.enabled && nic.watchdog.nics;
  nic.cc = read_cc_config(root);
  nic.rate_sample_interval = spec.output.rate_sample_interval;
  spec.congestion_control = describe(nic.cc);

  spec.flows = generate_traffic(root, spec.topology, spec.run.seed, doc.dir, spec.run.end);
  check_flow_sizes(spec.flows, nic);
  spec.collectives = read_collectives(root, spec.topology);
  CollectiveSetup& collectives = spec.collectives;
  collectives.record_timeline = spec.output.collective_timeline;
  if (!collectives.empty()) {
    // GPU nodes: the NICs sit on PCIe (a bottleneck only when slower than the link).
    const GpuConfig& gpu = collectives.gpu;
    const BitsPerSec host_rate = spec.topology.links.front().rate;
    if (gpu.nic_dma_rate() < host_rate) {
      nic.tx_dma_rate = gpu.nic_dma_rate();
      if (nic.rx_drain_rate.bps == 0) nic.rx_drain_rate = gpu.nic_dma_rate();
    }
    nic.host_latency = gpu.pcie_latency;
    resolve_connections(collectives, spec.topology, spec.routes,
                        spec.switches.port_to_port_latency);
  }
  spec.warnings = check_run_cost(spec);
  return spec;
}

bool same_resolution(FabricSpec a, FabricSpec b) {
  a.scenario_text.clear();
  a.scenario_file.clear();
  b.scenario_text.clear();
  b.scenario_file.clear();
  return a == b;
}

}  // namespace fabtwin
