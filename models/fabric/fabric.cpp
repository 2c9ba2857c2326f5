#include "models/fabric/fabric.h"

#include <sys/resource.h>

#include <array>
#include <chrono>
#include <cstring>
#include <functional>
#include <set>
#include <thread>

#include "models/fabric/distributed_result.h"
#include "models/traffic/traffic.h"

namespace fabtwin {

namespace {

// CPU time the process has used so far, every thread together: (user, system) seconds.
std::pair<double, double> process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
  };
  return {seconds(usage.ru_utime), seconds(usage.ru_stime)};
}

// Events that cross to another rank: a packet arrival travels as the event plus a copy of
// the packet (the copy lands in the receiving partition's pool, the original returns to its
// own); any other event (GPU nodes' slot credits and barriers) carries only values.
class PacketCodec final : public EventCodec {
 public:
  explicit PacketCodec(std::deque<PacketPool>& pools) : pools_(pools) {}
  void encode(const Event& e, std::vector<char>& out) override {
    const bool packet = kind_handler(e.kind) == kPacketArrival && is_node_(e.target);
    out.push_back(packet ? 1 : 0);
    append(out, e);
    if (!packet) return;
    auto* p = reinterpret_cast<Packet*>(e.data & ~kArrivalMarked);
    Packet copy = *p;
    if (e.data & kArrivalMarked) copy.ecn = Ecn::Ce;  // the mark the event carried
    append(out, copy);
    pools_[p->home].release(p);
  }
  Event decode(const char*& in, uint32_t partition) override {
    const bool packet = *in++ != 0;
    Event e;
    std::memcpy(&e, in, sizeof e);
    in += sizeof e;
    if (!packet) return e;
    Packet* p = pools_[partition].acquire();
    const uint16_t home = p->home;
    std::memcpy(p, in, sizeof *p);
    in += sizeof *p;
    p->home = home;
    p->next_free = nullptr;
    e.data = reinterpret_cast<uint64_t>(p);
    return e;
  }
  // Which components are network nodes (the only ones that receive packets).
  std::function<bool(ComponentId)> is_node_;

 private:
  template <typename T>
  static void append(std::vector<char>& out, const T& value) {
    const char* bytes = reinterpret_cast<const char*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof value);
  }
  std::deque<PacketPool>& pools_;
};

}  // namespace

Fabric::~Fabric() = default;

Fabric::Fabric(const ScenarioDocument& doc, int threads, Transport* transport)
    : Fabric(FabricSpec::resolve(doc), threads, transport) {}

Fabric::Fabric(FabricSpec spec, int threads, Transport* transport)
    : spec_(std::move(spec)), run_(spec_.run), transport_(transport) {
  if (threads > 0) run_.threads = threads;
  if (run_.threads == 0)
    run_.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const Topology& topology = spec_.topology;
  const CollectiveSetup& collectives = spec_.collectives;

  const bool distributed = transport_ != nullptr && transport_->ranks() > 1;
  if (distributed) run_.threads = 1;  // one partition per rank
  const std::optional<Time> pcie =
      collectives.empty() ? std::nullopt : std::optional{collectives.gpu.pcie_latency};
  // One partition per rank; the locality cut is for threads.
  const int parts = distributed ? transport_->ranks() : run_.threads;
  partitioning_ =
      partition_run(topology, parts, distributed ? parts : run_.partitions, pcie, run_.partitioner);
  // A thread that runs several partitions runs them one after another, so on one thread they
  // share one pool, which holds one peak instead of one per partition. Ranks and threads need a
  // pool each.
  const uint32_t pools = distributed || run_.threads > 1 ? partitioning_.partitions : 1;
  for (uint32_t p = 0; p < pools; ++p) pools_.emplace_back(static_cast<uint16_t>(p));
  const auto pool_of = [&](uint32_t partition) -> PacketPool& {
    return pools_[pools == 1 ? 0 : partition];
  };
  sim_ = std::make_unique<Simulator>(run_.seed);
  for (int v = 0; v < static_cast<int>(topology.nodes.size()); ++v) {
    const TopologyNode& node = topology.nodes[v];
    if (node.kind == NodeKind::Host) {
      PacketPool& pool = pool_of(partitioning_.partition_of[v]);
      auto nic = std::make_unique<HostNic>(node.name, pool, v, spec_.nic);
      nics_.push_back(nic.get());
      sim_->add(std::move(nic));
    } else {
      PacketPool& pool = pool_of(partitioning_.partition_of[v]);
      auto sw = std::make_unique<Switch>(node.name, pool, spec_.routes.table(v), v, spec_.switches);
      const StrategyPolicy& strategies = spec_.routing.strategies;
      if (strategies.any_adaptive()) {
        sw->set_routing_strategies(strategies.adaptive, strategies.for_switch(v, node.tier));
      }
      switches_.push_back(sw.get());
      sim_->add(std::move(sw));
    }
  }
  std::vector<uint32_t> partition_of = partitioning_.partition_of;
  if (!collectives.empty()) {
    // One GPU node component per node that has ranks, in the partition of its NICs.
    std::vector<bool> used(static_cast<size_t>(topology.gpu_nodes()), false);
    for (const std::vector<int>& nodes : collectives.spec_nodes) {
      for (int v : nodes) used[v] = true;
    }
    std::vector<ComponentId> ids(used.size(), 0);
    ComponentId next = static_cast<ComponentId>(sim_->component_count());
    for (size_t v = 0; v < used.size(); ++v) {
      if (used[v]) ids[v] = next++;
    }
    for (int v = 0; v < static_cast<int>(used.size()); ++v) {
      if (!used[v]) continue;
      std::vector<ComponentId> nics;
      for (int i = 0; i < topology.nics_per_node; ++i) {
        const int host = v * topology.nics_per_node + i;
        nics.push_back(static_cast<ComponentId>(host));
        nics_[host]->set_host(ids[v]);
      }
      auto node = std::make_unique<GpuNode>("node" + std::to_string(v), v, spec_.collectives,
                                            topology, ids, nics);
      gpu_nodes_.push_back(node.get());
      sim_->add(std::move(node));
      const int anchor = v * topology.nics_per_node + v % topology.nics_per_node;
      partition_of.push_back(partitioning_.partition_of[anchor]);
    }
  }
  sim_->set_partitions(partition_of, partitioning_.lookahead);
  // Each context takes packets from its own pool: a partition's (on one thread, the shared
  // one), or, for a thread running bursts taken from another partition, a lane's (added after
  // the partitions' pools).
  for (uint32_t p = 0; p < partitioning_.partitions; ++p) sim_->set_partition_local(p, &pool_of(p));
  sim_->set_lane_local([this, pools](size_t lane) {
    const size_t index = pools + lane;
    while (pools_.size() <= index) {
      pools_.emplace_back(static_cast<uint16_t>(pools_.size()));
    }
    return static_cast<void*>(&pools_[index]);
  });
  if (spec_.run.bursts) {
    // Between switches and NICs every event travels a link. Between a GPU node and its NICs
    // every event takes the PCIe latency at least: a NIC's notifications that, a node's posts
    // that plus the step latency, its credits and barriers a path over the fabric plus it.
    Time shortest = pcie.value_or(Time::max());
    for (const Link& l : topology.links) shortest = std::min(shortest, l.delay);
    if (shortest >= kLocalityWindow && shortest < Time::max()) sim_->set_burst_window(shortest);
  }
  sim_->set_between_windows([this] { PacketPool::balance(pools_); });
  if (distributed) {
    auto codec = std::make_unique<PacketCodec>(pools_);
    const auto nodes = static_cast<ComponentId>(topology.nodes.size());
    codec->is_node_ = [nodes](ComponentId id) { return id < nodes; };
    codec_ = std::move(codec);
    sim_->set_transport(transport_, codec_.get());
  }
  auto node_ports = [&](int v) -> std::vector<EgressPort>& {
    auto& c = static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v)));
    return c.ports();
  };
  for (int v = 0; v < static_cast<int>(topology.nodes.size()); ++v) {
    node_ports(v).resize(static_cast<size_t>(topology.nodes[v].ports));
  }
  for (const Link& l : topology.links) {
    wire(l, node_ports(l.a)[l.a_port], node_ports(l.b)[l.b_port]);
  }
  for (const FlowSpec& f : spec_.flows) {
    const uint32_t sq = nics_[f.src]->add_send_qp(f);
    const uint32_t rq = nics_[f.dst]->add_receive_qp(f, sq);
    nics_[f.src]->connect_send_qp(sq, rq);
  }
  add_connection_qps();
  // Link failures and recoveries reach both ends of the link; switches install the routes
  // recomputed after them.
  for (const LinkEvent& e : spec_.events) {
    const Link& l = topology.links[e.link];
    for (const auto& [node, port] : {std::pair(l.a, l.a_port), std::pair(l.b, l.b_port)}) {
      if (node < topology.hosts) {
        nics_[node]->add_link_change(e.at, e.up);
      } else {
        switches_[node - topology.hosts]->add_link_change(e.at, static_cast<uint32_t>(port), e.up);
      }
    }
  }
  for (const RouteUpdate& u : spec_.route_updates) {
    switches_[u.node - topology.hosts]->add_route_update(u.at, u.table);
  }
  if (spec_.ttl_can_expire) {
    for (Switch* sw : switches_) sw->check_every_frame(spec_.routing.ttl);
  }
  for (HostNic* nic : nics_) nic->begin();
  for (Switch* sw : switches_) sw->begin();
  for (GpuNode* node : gpu_nodes_) node->begin();
  const auto& lossless = spec_.switches.mmu.lossless;
  if (spec_.deadlock.enabled && spec_.switches.pfc &&
      std::find(lossless.begin(), lossless.end(), true) != lossless.end()) {
    // The detector looks at the nodes this process runs; under MPI the check exchanges them.
    std::vector<const HostNic*> nics(topology.nodes.size(), nullptr);
    std::vector<const Switch*> switches(topology.nodes.size(), nullptr);
    for (size_t v = 0; v < topology.nodes.size(); ++v) {
      if (!sim_->owns(partition_of[v])) continue;
      if (topology.nodes[v].kind == NodeKind::Host) {
        nics[v] = nics_[v];
      } else {
        switches[v] = switches_[v - static_cast<size_t>(topology.hosts)];
      }
    }
    detector_ = std::make_unique<DeadlockDetector>(spec_.deadlock, run_.stop_on_deadlock, topology,
                                                   lossless, std::move(nics), std::move(switches),
                                                   distributed ? transport_ : nullptr);
    sim_->set_checkpoints(spec_.deadlock.check_interval,
                          [d = detector_.get()](Time at) { return d->check(at); });
  }
}

// The NIC queue pairs of every network connection of the collectives: ib_qps_per_connection
// QPs each, messages alternating over them.
void Fabric::add_connection_qps() {
  CollectiveSetup& setup = spec_.collectives;
  const auto qps = static_cast<uint32_t>(setup.nccl.qps_per_connection);
  for (uint32_t id = 0; id < setup.connections.size(); ++id) {
    CollectiveConnection& conn = setup.connections[id];
    if (conn.transport != CollectiveTransport::Net) continue;
    const int dscp = setup.specs[conn.spec].dscp;
    for (uint32_t q = 0; q < qps; ++q) {
      const uint32_t sq =
          nics_[conn.src_host]->add_connection_send_qp(id, conn.dst_host, dscp, q, qps);
      const uint32_t rq =
          nics_[conn.dst_host]->add_connection_receive_qp(id, conn.src_host, dscp, sq, q, qps);
      nics_[conn.src_host]->connect_send_qp(sq, rq);
      conn.send_qps.push_back(sq);
    }
  }
}

RunResult Fabric::run(const Simulator::Progress& progress) {
  const auto [user_start, system_start] = process_cpu_seconds();
  const auto wall_start = std::chrono::steady_clock::now();
  const RunCounters counters = sim_->run(run_.end, progress, run_.threads);
  const auto wall_end = std::chrono::steady_clock::now();
  const auto [user_end, system_end] = process_cpu_seconds();
  // A run a check stopped is at its checkpoint: pauses still open end there.
  const Time stopped = counters.stop_reason.empty() ? counters.last_event_time : counters.stop_time;
  for (size_t v = 0; v < spec_.topology.nodes.size(); ++v) {
    static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v))).close_pauses(stopped);
  }

  RunResult r;
  r.scenario_text = spec_.scenario_text;
  r.warnings = spec_.warnings;
  r.scenario_file = spec_.scenario_file;
  r.seed = run_.seed;
  r.fingerprint = sim_->fingerprint();
  r.events = counters.events;
  r.end_time = run_.end;
  r.last_event_time = counters.last_event_time;
  r.reached_end = counters.reached_end;
  r.stop_reason = counters.stop_reason;
  r.stop_time = counters.stop_time;
  if (detector_) r.deadlock = detector_->report();
  r.deadlock.detection_time = spec_.deadlock.detection_time;
  r.deadlock.check_interval = spec_.deadlock.check_interval;
  r.wall_seconds = std::chrono::duration<double>(wall_end - wall_start).count();
  r.cpu_user_seconds = user_end - user_start;
  r.cpu_system_seconds = system_end - system_start;
  for (const PacketPool& pool : pools_) r.peak_packets_in_pool += pool.capacity();
  r.partitions = static_cast<int>(partitioning_.partitions);
  r.partitioner = partitioner_name(partitioning_.partitioner);
  r.cut_links = partitioning_.cut_links;
  r.window = partitioning_.lookahead;
  r.node_nics_together = partitioning_.node_nics_together;
  r.burst_window = sim_->burst_window();
  r.taken_events = counters.taken_events;
  r.threads = run_.threads;
  r.topology = spec_.topology.kind;
  r.hosts = spec_.topology.hosts;
  r.switches = static_cast<int>(switches_.size());
  r.routing = routing_algorithm_name(spec_.routing.algorithm);
  r.routing_strategy = routing_strategy_name(spec_.routing.strategies.strategy);
  if (!spec_.routing.strategies.rules.empty()) r.routing_strategy += " + rules";
  for (const LinkEvent& e : spec_.events) {
    const Link& l = spec_.topology.links[e.link];
    r.link_events.push_back(
        {e.at, spec_.topology.nodes[l.a].name, spec_.topology.nodes[l.b].name, e.up});
  }
  r.route_updates = static_cast<int64_t>(spec_.route_updates.size());
  for (const RouteEpoch& epoch : spec_.route_epochs) {
    for (const auto& [src, dst] : epoch.unreachable) {
      r.unreachable.push_back({epoch.from, static_cast<uint32_t>(src), static_cast<uint32_t>(dst)});
    }
  }
  r.flows.resize(spec_.flows.size());
  for (size_t i = 0; i < spec_.flows.size(); ++i) r.flows[i].spec = spec_.flows[i];
  r.congestion_control = spec_.congestion_control;
  for (HostNic* nic : nics_) {
    nic->collect(r.flows);
    r.data_packets_sent += nic->data_packets_sent();
    r.connection_rate_cuts += nic->connection_rate_cuts();
    for (const RateSample& s : nic->rate_samples()) {
      r.rate_samples.push_back(
          {s.time, s.flow, s.state.rate.bps, s.state.target.bps, s.state.alpha});
    }
  }
  GpuNodeRecords collective_records;
  for (const GpuNode* node : gpu_nodes_) collective_records.append(node->records());
  if (!spec_.collectives.empty() && !sim_->distributed())
    collect_collectives(r, collective_records);
  std::stable_sort(r.rate_samples.begin(), r.rate_samples.end(),
                   [](const RateSampleRecord& a, const RateSampleRecord& b) {
                     return a.time < b.time || (a.time == b.time && a.flow < b.flow);
                   });
  // Ports in node order; queue samples re-indexed to the global port list.
  std::vector<uint32_t> first_port(spec_.topology.nodes.size());
  size_t ports = 0;
  for (size_t v = 0; v < spec_.topology.nodes.size(); ++v) {
    ports += static_cast<size_t>(spec_.topology.nodes[v].ports);
  }
  r.ports.reserve(ports);  // no copies of the whole list while it grows
  // "leaf->spine" and the like, named once per pair of tiers (short strings, copied per port).
  std::array<std::array<std::string, 4>, 4> link_names;
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      link_names[a][b] =
          std::string(tier_name(static_cast<Tier>(a))) + "->" + tier_name(static_cast<Tier>(b));
    }
  }
  for (size_t v = 0; v < spec_.topology.nodes.size(); ++v) {
    first_port[v] = static_cast<uint32_t>(r.ports.size());
    const auto& node = static_cast<NetworkNode&>(sim_->component(static_cast<ComponentId>(v)));
    for (uint32_t p = 0; p < node.ports().size(); ++p) {
      const EgressPort& port = node.ports()[p];
      PortRecord rec;
      rec.node = spec_.topology.nodes[v].name;
      rec.switch_port = spec_.topology.nodes[v].kind == NodeKind::Switch;
      rec.port = p;
      const TopologyNode& peer =
          spec_.topology.nodes[spec_.topology.peer(static_cast<int>(v), static_cast<int>(p)).node];
      rec.peer = peer.name;
      rec.link =
          link_names[static_cast<int>(spec_.topology.nodes[v].tier)][static_cast<int>(peer.tier)];
      rec.rate = port.rate;
      rec.busy_time = port.busy_time;
      rec.counters = port.counter_values();
      for (const PauseInterval& pi : port.pause_intervals) {
        r.pauses.push_back({static_cast<uint32_t>(r.ports.size()), pi.priority, pi.start, pi.end});
      }
      r.ports.push_back(std::move(rec));
    }
  }
  for (size_t s = 0; s < switches_.size(); ++s) {
    const int v = spec_.topology.hosts + static_cast<int>(s);
    r.flowlet_moves += switches_[s]->flowlet_moves();
    const SharedBuffer& b = switches_[s]->buffer();
    BufferRecord rec;
    rec.node = spec_.topology.nodes[v].name;
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
    // Each port's utilization between consecutive samples (from 0 for the first).
    std::vector<std::pair<Time, Time>> last(switches_[s]->ports().size());  // (time, busy)
    for (const QueueSample& q : switches_[s]->queue_samples()) {
      r.queue_samples.push_back({q.time, first_port[v] + q.port, q.bytes});
      auto& [at, busy] = last[q.port];
      if (q.time > at) {
        r.link_samples.push_back(
            {q.time, first_port[v] + q.port,
             static_cast<double>((q.busy - busy).ps) / static_cast<double>((q.time - at).ps)});
      }
      at = q.time;
      busy = q.busy;
    }
  }
  if (sim_->distributed()) {
    const std::vector<std::string> texts =
        transport_->gather(encode_result(r, sim_->component_fingerprints(), collective_records));
    if (transport_->rank() == 0) {
      GpuNodeRecords all_records;
      RunResult merged = merge_results(texts, run_.seed, all_records);
      if (!spec_.collectives.empty()) collect_collectives(r, all_records);
      for (FlowRecord& f : merged.flows) f.spec = r.flows[f.spec.id].spec;
      std::swap(r.flows, merged.flows);
      std::swap(r.ports, merged.ports);
      std::swap(r.queue_samples, merged.queue_samples);
      std::swap(r.link_samples, merged.link_samples);
      std::swap(r.pauses, merged.pauses);
      std::swap(r.buffers, merged.buffers);
      std::swap(r.buffer_samples, merged.buffer_samples);
      std::swap(r.rate_samples, merged.rate_samples);
      r.fingerprint = merged.fingerprint;
      r.data_packets_sent = merged.data_packets_sent;
      r.connection_rate_cuts = merged.connection_rate_cuts;
      r.flowlet_moves = merged.flowlet_moves;
      r.peak_packets_in_pool = merged.peak_packets_in_pool;
    }
  }
  return r;
}

}  // namespace fabtwin

namespace fabtwin {

// nccl-tests rows from the ranks' timings, and the timelines gathered from every GPU node.
void Fabric::collect_collectives(RunResult& r, const GpuNodeRecords& records) const {
  const CollectiveSetup& setup = spec_.collectives;
  for (int g = 0; g < spec_.topology.gpus(); ++g) {
    r.gpus.push_back("node" + std::to_string(spec_.topology.node_of_gpu(g)) + "/gpu" +
                     std::to_string(g % spec_.topology.gpus_per_node));
  }
  std::vector<std::vector<RankTiming>> timings(setup.ops.size());
  for (const RankTiming& t : records.timings) timings[t.op].push_back(t);
  r.collective_iterations = records.iterations;
  std::sort(r.collective_iterations.begin(), r.collective_iterations.end(),
            [](const CollectiveIterationRecord& a, const CollectiveIterationRecord& b) {
              return std::tie(a.row, a.iteration, a.rank) < std::tie(b.row, b.iteration, b.rank);
            });
  r.collective_steps = records.steps;
  r.collective_transfers = records.nvlink;
  std::vector<NetMessage> posted = records.posted, arrived = records.arrived;
  auto by_message = [](const NetMessage& a, const NetMessage& b) {
    return a.connection < b.connection || (a.connection == b.connection && a.sequence < b.sequence);
  };
  std::sort(posted.begin(), posted.end(), by_message);
  std::sort(arrived.begin(), arrived.end(), by_message);
  for (size_t i = 0, j = 0; i < posted.size(); ++i) {
    const NetMessage& p = posted[i];
    while (j < arrived.size() && by_message(arrived[j], p)) ++j;
    const bool here = j < arrived.size() && !by_message(p, arrived[j]);
    const CollectiveConnection& c = setup.connections[p.connection];
    r.collective_transfers.push_back({p.op, p.iteration, static_cast<uint16_t>(c.channel),
                                      CollectiveTransport::Net, static_cast<uint32_t>(c.src_rank),
                                      static_cast<uint32_t>(c.dst_rank), p.bytes, p.time,
                                      here ? arrived[j].time : Time{-1}});
  }
  std::sort(
      r.collective_steps.begin(), r.collective_steps.end(),
      [](const CollectiveStepRecord& a, const CollectiveStepRecord& b) {
        return std::tie(a.row, a.iteration, a.rank, a.channel, a.lane, a.start, a.end, a.step) <
               std::tie(b.row, b.iteration, b.rank, b.channel, b.lane, b.start, b.end, b.step);
      });
  std::sort(r.collective_transfers.begin(), r.collective_transfers.end(),
            [](const CollectiveTransferRecord& a, const CollectiveTransferRecord& b) {
              return std::tie(a.row, a.iteration, a.posted, a.channel, a.src_rank, a.dst_rank) <
                     std::tie(b.row, b.iteration, b.posted, b.channel, b.src_rank, b.dst_rank);
            });
  for (uint32_t i = 0; i < setup.ops.size(); ++i) {
    const CollectiveOp& op = setup.ops[i];
    const CollectiveSpec& spec = setup.specs[op.spec];
    const int ranks = static_cast<int>(spec.gpus.size());
    CollectiveRow row;
    row.generator = spec.generator;
    row.op = nccl::name(spec.op);
    const bool p2p = spec.op == nccl::Op::AllToAll || spec.op == nccl::Op::SendRecv;
    row.algorithm = p2p ? "p2p" : nccl::name(op.plan.algorithm);
    row.protocol = "Simple";
    row.size = op.size;
    row.count = nccl::element_count(spec.op, op.size, spec.type_bytes, ranks);
    row.type = spec.type;
    row.redop = spec.redop;
    row.root = spec.op == nccl::Op::Broadcast || spec.op == nccl::Op::Reduce ? spec.root : -1;
    row.ranks = ranks;
    row.gpus.assign(spec.gpus.begin(), spec.gpus.end());
    row.channels = op.plan.channels;
    row.iterations = spec.iterations;
    const std::vector<RankTiming>& t = timings[i];
    if (static_cast<int>(t.size()) == ranks) {  // every rank finished this size
      double sum = 0;
      row.start = Time::max();
      for (const RankTiming& x : t) {
        sum += static_cast<double>((x.end - x.start).ps);
        row.start = std::min(row.start, x.start);
        row.end = std::max(row.end, x.end);
      }
      row.time_us = sum / ranks / spec.iterations / 1e6;
      row.algbw = row.time_us > 0 ? static_cast<double>(op.size) / (row.time_us * 1e3) : 0;
      row.busbw = row.algbw * nccl::bus_factor(spec.op, ranks);
    }
    r.collectives.push_back(std::move(row));
  }
}

}  // namespace fabtwin
