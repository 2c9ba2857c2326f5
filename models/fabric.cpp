#include "models/fabric.h"

#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "models/distributed_result.h"
#include "models/traffic.h"

namespace fabtwin {

namespace {
const ParamGroup kRunParams{
    "run",
    "run",
    "Run control",
    {
        {"end", ParamType::Time, "\"1s\"",
         "simulated time limit; a run also stops as soon as no traffic is left", "fabtwin"},
        {"seed", ParamType::Integer, "1",
         "seed of every random stream (ECMP source ports, traffic generators)", "fabtwin", "0.."},
        {"threads", ParamType::Integer, "0",
         "threads (partitions of the fabric) to simulate on; 0 = every hardware thread. Results "
         "are identical for any number (--threads overrides)",
         "fabtwin", "0..1024"},
    }};
const ParamGroup kOutputParams{
    "output",
    "output",
    "Result files",
    {
        {"hdf5", ParamType::Text, "(none)",
         "HDF5 result file, relative to the working directory (--out overrides)", "fabtwin"},
        {"rate_sample_interval", ParamType::Time, "\"10us\"",
         "period of the per-QP congestion-control traces (rate, target, alpha) when nic.cc is "
         "on; \"0us\" turns them off",
         "fabtwin"},
        {"queue_sample_interval", ParamType::Time, "\"10us\"",
         "period of the per-port queue-depth samples; \"0us\" turns them off", "fabtwin"},
    }};
const std::set<std::string> kSections{"topology", "fabric", "nic",         "routing", "traffic",
                                      "run",      "output", "description", "$schema"};
const ParamGroup kFabricParams{"fabric",
                               "fabric",
                               "Fabric sections",
                               {{"link", ParamType::List, "{}", "see fabric.link", "fabtwin"},
                                {"switch", ParamType::List, "{}", "see fabric.switch", "fabtwin"},
                                {"pfc", ParamType::List, "{}", "see fabric.pfc", "fabtwin"},
                                {"ecn", ParamType::List, "{}", "see fabric.ecn", "fabtwin"},
                                {"qos", ParamType::List, "{}", "see fabric.qos", "fabtwin"}}};
const ParamGroup kRoutingParams{
    "routing",
    "routing",
    "Routing",
    {{"algorithm", ParamType::Choice, "\"ecmp\"",
      "shortest paths; equal-cost paths chosen by a hash of the 5-tuple (UDP source port per QP)",
      "fabtwin", "ecmp"}}};

// Packet arrivals that cross to another rank travel as the event plus a copy of the packet;
// the copy lands in the receiving partition's pool and the original returns to its own.
class PacketCodec final : public EventCodec {
 public:
  explicit PacketCodec(std::vector<PacketPool>& pools) : pools_(pools) {}
  void encode(const Event& e, std::vector<char>& out) override {
    if (kind_handler(e.kind) != kPacketArrival) throw std::logic_error("only packets cross ranks");
    const auto* packet = reinterpret_cast<const Packet*>(e.data);
    append(out, e);
    append(out, *packet);
    pools_[packet->home].release(const_cast<Packet*>(packet));
  }
  Event decode(const char*& in, uint32_t partition) override {
    Event e;
    std::memcpy(&e, in, sizeof e);
    in += sizeof e;
    Packet* p = pools_[partition].acquire();
    const uint16_t home = p->home;
    std::memcpy(p, in, sizeof *p);
    in += sizeof *p;
    p->home = home;
    p->next_free = nullptr;
    e.data = reinterpret_cast<uint64_t>(p);
    return e;
  }

 private:
  template <typename T>
  static void append(std::vector<char>& out, const T& value) {
    const char* bytes = reinterpret_cast<const char*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof value);
  }
  std::vector<PacketPool>& pools_;
};

const nlohmann::json& section(const nlohmann::json& root, const char* key) {
  static const nlohmann::json none;
  return root.contains(key) ? root[key] : none;
}
}  // namespace

std::vector<const ParamGroup*> all_param_groups() {
  std::vector<const ParamGroup*> groups{&kTopologyParams, &kLinkParams};
  for (const ParamGroup* g : switch_param_groups()) groups.push_back(g);
  groups.push_back(&HostNic::params());
  for (const ParamGroup* g : dcqcn_param_groups()) groups.push_back(g);
  groups.push_back(&kRoutingParams);
  for (const ParamGroup* g : traffic_param_groups()) groups.push_back(g);
  groups.push_back(&kRunParams);
  groups.push_back(&kOutputParams);
  return groups;
}

RunConfig Fabric::read_run_config(const nlohmann::json& scenario) {
  ParamReader r(section(scenario, "run"), "run", kRunParams);
  RunConfig c;
  c.end = r.time("end");
  c.seed = static_cast<uint64_t>(r.integer("seed"));
  c.threads = static_cast<int>(r.integer("threads"));
  r.finish();
  return c;
}

Fabric::~Fabric() = default;

Fabric::Fabric(const ScenarioDocument& doc, int threads, Transport* transport)
    : transport_(transport) {
  const nlohmann::json& root = doc.root;
  for (const auto& [key, value] : root.items()) {
    if (!kSections.count(key)) {
      throw ScenarioError(key,
                          "unknown section; a scenario has topology, fabric, nic, routing, "
                          "traffic, run, output (and extends, description, $schema)");
    }
  }
  if (root.contains("description") && !root["description"].is_string()) {
    throw ScenarioError("description", "expected text, found " + json_text(root["description"]));
  }
  scenario_text_ = root.dump(2);
  scenario_file_ = doc.file.string();
  run_ = read_run_config(root);
  if (threads > 0) run_.threads = threads;
  if (run_.threads == 0)
    run_.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  ParamReader fabric(section(root, "fabric"), "fabric", kFabricParams);
  for (const char* key : {"link", "switch", "pfc", "ecn", "qos"}) fabric.raw(key);
  fabric.finish();
  topology_ = read_topology(root);
  NicConfig nic_config = HostNic::read_config(root);
  SwitchConfig switch_config =
      read_switch_config(root, roce::data_frame(static_cast<int>(nic_config.mtu.count), true));
  nic_config.dscp_to_priority = switch_config.dscp_to_priority;
  nic_config.pfc = switch_config.pfc;
  nic_config.lossless = switch_config.mmu.lossless;
  nic_config.pause_quanta = switch_config.pause_quanta;
  nic_config.dcqcn = read_dcqcn_config(root, nic_config.dcqcn_config);
  congestion_control_ =
      nic_config.dcqcn ? "dcqcn (" + nic_config.dcqcn_config.profile + " profile)" : "none";
  ParamReader routing(section(root, "routing"), "routing", kRoutingParams);
  routing.choice("algorithm");
  routing.finish();
  ParamReader output(section(root, "output"), "output", kOutputParams);
  if (output.has("hdf5")) output.text("hdf5");
  switch_config.queue_sample_interval = output.time("queue_sample_interval");
  nic_config.rate_sample_interval = output.time("rate_sample_interval");
  output.finish();

  routing_ = std::make_unique<RoutingTable>(topology_);
  flows_ = generate_traffic(root, topology_, run_.seed, doc.dir);

  const bool distributed = transport_ != nullptr && transport_->ranks() > 1;
  if (distributed) run_.threads = 1;  // one partition per rank
  partitioning_ = partition_fabric(topology_, distributed ? transport_->ranks() : run_.threads);
  for (uint32_t p = 0; p < partitioning_.partitions; ++p) {
    pools_.emplace_back(static_cast<uint16_t>(p), partitioning_.partitions);
  }
  sim_ = std::make_unique<Simulator>(run_.seed);
  for (int v = 0; v < static_cast<int>(topology_.nodes.size()); ++v) {
    const TopologyNode& node = topology_.nodes[v];
    if (node.kind == NodeKind::Host) {
      PacketPool& pool = pools_[partitioning_.partition_of[v]];
      auto nic = std::make_unique<HostNic>(node.name, pool, v, nic_config);
      nics_.push_back(nic.get());
      sim_->add(std::move(nic));
    } else {
      PacketPool& pool = pools_[partitioning_.partition_of[v]];
      auto sw = std::make_unique<Switch>(node.name, pool, *routing_, v, switch_config);
      switches_.push_back(sw.get());
      sim_->add(std::move(sw));
    }
  }
  sim_->set_partitions(partitioning_.partition_of, partitioning_.lookahead);
  sim_->set_between_windows([this] { PacketPool::return_packets(pools_); });
  if (distributed) {
    codec_ = std::make_unique<PacketCodec>(pools_);
    sim_->set_transport(transport_, codec_.get());
  }
  auto node_ports = [&](int v) -> std::vector<EgressPort>& {
    auto& c = static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v)));
    return c.ports();
  };
  for (int v = 0; v < static_cast<int>(topology_.nodes.size()); ++v) {
    node_ports(v).resize(static_cast<size_t>(topology_.nodes[v].ports));
  }
  for (const TopologyLink& l : topology_.links) {
    EgressPort& a = node_ports(l.a)[l.a_port];
    EgressPort& b = node_ports(l.b)[l.b_port];
    a.set_rate(l.rate);
    b.set_rate(l.rate);
    a.delay = b.delay = l.delay;
    a.peer = static_cast<ComponentId>(l.b);
    a.peer_port = static_cast<uint32_t>(l.b_port);
    b.peer = static_cast<ComponentId>(l.a);
    b.peer_port = static_cast<uint32_t>(l.a_port);
  }
  for (const FlowSpec& f : flows_) {
    const uint32_t sq = nics_[f.src]->add_send_qp(f);
    const uint32_t rq = nics_[f.dst]->add_receive_qp(f, sq);
    nics_[f.src]->connect_send_qp(sq, rq);
  }
  for (HostNic* nic : nics_) nic->begin();
  for (Switch* sw : switches_) sw->begin();
}

RunResult Fabric::run(const Simulator::Progress& progress) {
  const auto wall_start = std::chrono::steady_clock::now();
  const RunCounters counters = sim_->run(run_.end, progress, run_.threads);
  const auto wall_end = std::chrono::steady_clock::now();
  for (size_t v = 0; v < topology_.nodes.size(); ++v) {
    static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v)))
        .close_pauses(counters.last_event_time);
  }

  RunResult r;
  r.scenario_text = scenario_text_;
  r.scenario_file = scenario_file_;
  r.seed = run_.seed;
  r.fingerprint = sim_->fingerprint();
  r.events = counters.events;
  r.end_time = run_.end;
  r.last_event_time = counters.last_event_time;
  r.reached_end = counters.reached_end;
  r.wall_seconds = std::chrono::duration<double>(wall_end - wall_start).count();
  PacketPool::return_packets(pools_);
  for (const PacketPool& pool : pools_) r.peak_packets_in_pool += pool.capacity();
  r.partitions = static_cast<int>(partitioning_.partitions);
  r.threads = run_.threads;
  r.topology = topology_.kind;
  r.hosts = topology_.hosts;
  r.switches = static_cast<int>(switches_.size());
  r.flows.resize(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) r.flows[i].spec = flows_[i];
  r.congestion_control = congestion_control_;
  for (HostNic* nic : nics_) {
    nic->collect(r.flows);
    r.data_packets_sent += nic->data_packets_sent();
    for (const RateSample& s : nic->rate_samples()) {
      r.rate_samples.push_back(
          {s.time, s.flow, s.state.rate.bps, s.state.target.bps, s.state.alpha});
    }
  }
  std::stable_sort(r.rate_samples.begin(), r.rate_samples.end(),
                   [](const RateSampleRecord& a, const RateSampleRecord& b) {
                     return a.time < b.time || (a.time == b.time && a.flow < b.flow);
                   });
  // Ports in node order; queue samples re-indexed to the global port list.
  std::vector<uint32_t> first_port(topology_.nodes.size());
  std::vector<std::vector<std::string>> peer_names(topology_.nodes.size());
  for (size_t v = 0; v < topology_.nodes.size(); ++v)
    peer_names[v].resize(topology_.nodes[v].ports);
  for (const TopologyLink& l : topology_.links) {
    peer_names[l.a][l.a_port] = topology_.nodes[l.b].name;
    peer_names[l.b][l.b_port] = topology_.nodes[l.a].name;
  }
  for (size_t v = 0; v < topology_.nodes.size(); ++v) {
    first_port[v] = static_cast<uint32_t>(r.ports.size());
    const auto& node = static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v)));
    for (uint32_t p = 0; p < node.ports().size(); ++p) {
      const EgressPort& port = node.ports()[p];
      PortRecord rec;
      rec.node = topology_.nodes[v].name;
      rec.switch_port = topology_.nodes[v].kind == NodeKind::Switch;
      rec.port = p;
      rec.peer = peer_names[v][p];
      rec.rate = port.rate;
      rec.busy_time = port.busy_time;
      rec.counters = port.counters;
      for (const PauseInterval& pi : port.pause_intervals) {
        r.pauses.push_back({static_cast<uint32_t>(r.ports.size()), pi.priority, pi.start, pi.end});
      }
      r.ports.push_back(std::move(rec));
    }
  }
  for (size_t s = 0; s < switches_.size(); ++s) {
    const int v = topology_.hosts + static_cast<int>(s);
    const SharedBuffer& b = switches_[s]->buffer();
    BufferRecord rec;
    rec.node = topology_.nodes[v].name;
    rec.buffer = b.size();
    rec.shared_pool = b.shared_pool();
    for (size_t p = 0; p < switches_[s]->ports().size(); ++p) {
      rec.headroom = std::max(rec.headroom, b.headroom_of(static_cast<int>(p)));
    }
    rec.max_used = b.max_used();
    rec.headroom_overflows = switches_[s]->headroom_overflows();
    r.buffers.push_back(rec);
    for (const BufferSample& q : switches_[s]->buffer_samples()) {
      r.buffer_samples.push_back({q.time, static_cast<uint32_t>(s), q.bytes});
    }
    for (const QueueSample& q : switches_[s]->queue_samples()) {
      r.queue_samples.push_back({q.time, first_port[v] + q.port, q.bytes});
    }
  }
  if (sim_->distributed()) {
    const std::vector<std::string> texts =
        transport_->gather(encode_result(r, sim_->component_fingerprints()));
    if (transport_->rank() == 0) {
      RunResult merged = merge_results(texts, run_.seed);
      for (FlowRecord& f : merged.flows) f.spec = r.flows[f.spec.id].spec;
      std::swap(r.flows, merged.flows);
      std::swap(r.ports, merged.ports);
      std::swap(r.queue_samples, merged.queue_samples);
      std::swap(r.pauses, merged.pauses);
      std::swap(r.buffers, merged.buffers);
      std::swap(r.buffer_samples, merged.buffer_samples);
      std::swap(r.rate_samples, merged.rate_samples);
      r.fingerprint = merged.fingerprint;
      r.data_packets_sent = merged.data_packets_sent;
      r.peak_packets_in_pool = merged.peak_packets_in_pool;
    }
    r.partitions = static_cast<int>(partitioning_.partitions);
  }
  return r;
}

}  // namespace fabtwin
