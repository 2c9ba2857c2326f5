#include "models/collectives/gpu_node.h"

#include <algorithm>
#include <cmath>

#include "models/nic/host_nic.h"

namespace fabtwin {

using namespace gpu_node_handler;

namespace {

Time transfer_time(int64_t bytes, double bytes_per_second) {
  return Time{
      static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 1e12 / bytes_per_second))};
}

}  // namespace

struct GpuNode::LaneState {
  const nccl::Lane* lane = nullptr;
  size_t next = 0;
  bool busy = false;
  int slot = 0;  // rank slot
  Time start{};
};

struct GpuNode::Stream {
  uint32_t index = 0;  // in streams_
  uint32_t spec = 0;
  size_t position = 0;  // index into spec_ops
  uint32_t op = 0;
  nccl::Plan plan;
  std::vector<uint32_t> connection;  // plan connection -> setup connection
  std::vector<LaneState> lanes;
  struct Rank {
    int rank = 0;
    std::vector<uint32_t> lanes;
    size_t left = 0;
    int iteration = 0;
    Time launched{};
    Time timed_start{};
  };
  std::vector<Rank> ranks;
  size_t ranks_done = 0;
};

GpuNode::GpuNode(std::string name, int node, const CollectiveSetup& setup, const Topology& topology,
                 std::vector<ComponentId> node_components, std::vector<ComponentId> nics)
    : Component(std::move(name)),
      node_(node),
      setup_(setup),
      topology_(topology),
      node_components_(std::move(node_components)),
      nics_(std::move(nics)),
      stream_of_spec_(setup.specs.size(), -1),
      nvlink_free_(static_cast<size_t>(topology.gpus_per_node)),
      barrier_count_(setup.specs.size(), 0) {
  for (uint32_t s = 0; s < setup.specs.size(); ++s) {
    const std::vector<int>& nodes = setup.spec_nodes[s];
    if (!std::binary_search(nodes.begin(), nodes.end(), node)) continue;
    stream_of_spec_[s] = static_cast<int>(streams_.size());
    auto stream = std::make_unique<Stream>();
    stream->spec = s;
    stream->index = static_cast<uint32_t>(streams_.size());
    streams_.push_back(std::move(stream));
  }
}

GpuNode::~GpuNode() = default;

void GpuNodeRecords::append(const GpuNodeRecords& o) {
  timings.insert(timings.end(), o.timings.begin(), o.timings.end());
  iterations.insert(iterations.end(), o.iterations.begin(), o.iterations.end());
  steps.insert(steps.end(), o.steps.begin(), o.steps.end());
  nvlink.insert(nvlink.end(), o.nvlink.begin(), o.nvlink.end());
  posted.insert(posted.end(), o.posted.begin(), o.posted.end());
  arrived.insert(arrived.end(), o.arrived.begin(), o.arrived.end());
}

void GpuNode::begin() {
  send_.resize(setup_.connections.size());
  recv_.resize(setup_.connections.size());
  if (setup_.nccl.split_data_on_qps) {
    const auto qps = static_cast<size_t>(setup_.nccl.qps_per_connection);
    for (size_t id = 0; id < setup_.connections.size(); ++id) {
      if (setup_.connections[id].transport != CollectiveTransport::Net) continue;
      send_[id].parts.assign(qps, 0);
      recv_[id].parts.assign(qps, 0);
    }
  }
  for (const auto& s : streams_) {
    hold_work();  // released when this node has run the last size
    schedule_self(setup_.specs[s->spec].start, kOpStart, uint64_t{s->spec} << 32);
  }
}

void GpuNode::handle(const Event& e) {
  const uint32_t index = kind_index(e.kind);
  switch (kind_handler(e.kind)) {
    case kNicMessageArrived: {
      const auto id = static_cast<uint32_t>(e.data >> 32);
      RecvSide& r = recv_[id];
      if (r.parts.empty()) {
        message_arrived(id, static_cast<uint32_t>(e.data));
        break;
      }
      const int64_t before = *std::min_element(r.parts.begin(), r.parts.end());
      const int64_t whole = whole_messages(r.parts, e.data & 0xFFFFFFFF);
      for (int64_t m = before; m < whole; ++m) message_arrived(id, static_cast<uint32_t>(m));
      break;
    }
    case kNvArrive:
      message_arrived(static_cast<uint32_t>(e.data >> 32), static_cast<uint32_t>(e.data));
      break;
    case kNicMessageAcked: {
      SendSide& s = send_[e.data >> 32];
      s.acked = s.parts.empty() ? s.acked + 1 : whole_messages(s.parts, e.data & 0xFFFFFFFF);
      wake(s.waiter);
      break;
    }
    case kCredit: {
      SendSide& s = send_[e.data];
      ++s.credited;
      wake(s.waiter);
      break;
    }
    case kUnitDone:
      finish_unit(static_cast<uint32_t>(e.data >> 32), static_cast<uint32_t>(e.data));
      break;
    case kGo: {
      Stream& s = *streams_[index];
      Stream::Rank& r = s.ranks[e.data];
      if (r.lanes.empty()) {  // nothing to move (a rank alone): done at launch
        rank_done(s, static_cast<int>(e.data));
        break;
      }
      for (uint32_t lane : r.lanes) try_start(index, lane);
      break;
    }
    case kOpStart:
      start_op(*streams_[stream_of_spec_[e.data >> 32]], static_cast<size_t>(e.data & 0xFFFFFFFF));
      break;
    case kBarrier:
      barrier(static_cast<uint32_t>(e.data >> 32), static_cast<uint32_t>(e.data));
      break;
    default:
      break;
  }
}

void GpuNode::start_op(Stream& s, size_t position) {
  s.position = position;
  s.op = setup_.spec_ops[s.spec][position];
  const nccl::PlanInput& input = setup_.ops[s.op].plan;
  s.plan = nccl::make_plan(input, [&](int rank) { return input.rank_node[rank] == node_; });
  s.connection.clear();
  for (const nccl::Connection& c : s.plan.connections) {
    s.connection.push_back(setup_.connection(s.spec, c.src, c.dst, c.channel));
  }
  s.lanes.assign(s.plan.lanes.size(), LaneState{});
  s.ranks.clear();
  for (uint32_t l = 0; l < s.plan.lanes.size(); ++l) {
    const nccl::Lane& lane = s.plan.lanes[l];
    auto it = std::find_if(s.ranks.begin(), s.ranks.end(),
                           [&](const Stream::Rank& r) { return r.rank == lane.rank; });
    if (it == s.ranks.end()) {
      s.ranks.push_back({lane.rank, {}, 0, 0, {}, {}});
      it = s.ranks.end() - 1;
    }
    s.lanes[l].lane = &lane;
    s.lanes[l].slot = static_cast<int>(it - s.ranks.begin());
    it->lanes.push_back(l);
  }
  for (int r = 0; r < static_cast<int>(input.rank_node.size()); ++r) {  // ranks without work
    if (input.rank_node[r] != node_) continue;
    if (std::none_of(s.ranks.begin(), s.ranks.end(),
                     [&](const Stream::Rank& x) { return x.rank == r; })) {
      s.ranks.push_back({r, {}, 0, 0, {}, {}});
    }
  }
  s.ranks_done = 0;
  for (int slot = 0; slot < static_cast<int>(s.ranks.size()); ++slot) launch(s, slot);
}

// A rank launches its next iteration: its lanes start over after the launch latency.
void GpuNode::launch(Stream& s, int slot) {
  Stream::Rank& r = s.ranks[slot];
  r.launched = now();
  if (r.iteration == setup_.specs[s.spec].warmup) r.timed_start = now();
  r.left = r.lanes.size();
  for (uint32_t l : r.lanes) {
    s.lanes[l].next = 0;
    s.lanes[l].busy = false;
  }
  schedule_self(now() + setup_.nccl.base_latency, make_kind(kGo, s.index),
                static_cast<uint64_t>(slot));
}

void GpuNode::wake(int64_t waiter) {
  if (waiter < 0) return;
  try_start(static_cast<uint32_t>(waiter >> 32), static_cast<uint32_t>(waiter));
}

void GpuNode::try_start(uint32_t stream, uint32_t lane) {
  Stream& s = *streams_[stream];
  LaneState& l = s.lanes[lane];
  if (l.busy || l.next >= l.lane->units.size()) return;
  const nccl::Unit& u = l.lane->units[l.next];
  const auto waiter = static_cast<int64_t>(uint64_t{stream} << 32 | lane);
  for (int32_t c : u.recv) {
    if (c < 0) continue;
    RecvSide& r = recv_[s.connection[c]];
    r.waiter = -1;
    if (r.arrived <= r.consumed) {
      r.waiter = waiter;
      return;
    }
  }
  for (int32_t c : u.send) {
    if (c < 0) continue;
    const uint32_t id = s.connection[c];
    SendSide& x = send_[id];
    x.waiter = -1;
    const int slots = s.plan.connections[c].slots;
    const bool net = setup_.connections[id].transport == CollectiveTransport::Net;
    if (x.posted - x.credited >= slots || (net && x.posted - x.acked >= slots)) {
      x.waiter = waiter;
      return;
    }
  }
  l.busy = true;
  l.start = now();
  Time done = now() + transfer_time(u.bytes, setup_.gpu.channel_rate * l.lane->share);
  const int local = setup_.specs[s.spec].gpus[l.lane->rank] % topology_.gpus_per_node;
  for (int32_t c : u.send) {  // an NVLink write happens while the kernel copies
    if (c < 0 || setup_.connections[s.connection[c]].transport != CollectiveTransport::NvLink)
      continue;
    Time& free = nvlink_free_[local];
    free = std::max(free, now()) + transfer_time(u.bytes, setup_.gpu.nvlink_rate.bps / 8.0);
    done = std::max(done, free);
  }
  schedule_self(done, kUnitDone, uint64_t{stream} << 32 | lane);
}

void GpuNode::finish_unit(uint32_t stream, uint32_t lane) {
  Stream& s = *streams_[stream];
  LaneState& l = s.lanes[lane];
  const nccl::Unit& u = l.lane->units[l.next];
  const Stream::Rank& rank = s.ranks[l.slot];
  const CollectiveSpec& spec = setup_.specs[s.spec];
  const CollectiveOp& op = setup_.ops[s.op];
  const nccl::Connection* first_recv = nullptr;
  const nccl::Connection* first_send = nullptr;
  for (int32_t c : u.recv) {
    if (c < 0) continue;
    if (!first_recv) first_recv = &s.plan.connections[c];
    const uint32_t id = s.connection[c];
    ++recv_[id].consumed;
    const CollectiveConnection& conn = setup_.connections[id];
    if (conn.transport == CollectiveTransport::NvLink) {
      schedule_self(now() + op.nvlink_step_latency, kCredit, id);
    } else {
      schedule(now() + conn.credit_latency,
               node_components_[topology_.node_of_gpu(spec.gpus[conn.src_rank])], kCredit, id);
    }
  }
  for (int32_t c : u.send) {
    if (c < 0) continue;
    if (!first_send) first_send = &s.plan.connections[c];
    const uint32_t id = s.connection[c];
    const CollectiveConnection& conn = setup_.connections[id];
    const auto sequence = static_cast<uint64_t>(send_[id].posted++);
    if (conn.transport == CollectiveTransport::NvLink) {
      const Time arrive = now() + op.nvlink_step_latency;
      schedule_self(arrive, kNvArrive, uint64_t{id} << 32 | sequence);
      if (setup_.record_timeline)
        records_.nvlink.push_back({s.op, static_cast<uint32_t>(rank.iteration),
                                   static_cast<uint16_t>(conn.channel), CollectiveTransport::NvLink,
                                   static_cast<uint32_t>(conn.src_rank),
                                   static_cast<uint32_t>(conn.dst_rank), u.bytes, l.start, arrive});
    } else {
      Time delay = op.net_step_latency + setup_.gpu.pcie_latency;
      if (!setup_.gpu.gpudirect) delay += setup_.gpu.bounce_latency;
      const bool immediate = setup_.nccl.adaptive_routing && u.bytes > setup_.nccl.ar_threshold;
      const auto qps = static_cast<uint32_t>(conn.send_qps.size());
      if (setup_.nccl.split_data_on_qps) {  // a part on every QP, as ncclIbMultiSend splits
        const int64_t chunk = ((u.bytes + qps - 1) / qps + 127) / 128 * 128;
        for (uint32_t q = 0; q < qps; ++q) {
          const int64_t part = std::clamp<int64_t>(u.bytes - chunk * q, 0, chunk);
          schedule(now() + delay, static_cast<ComponentId>(conn.src_host), kNicPostMessage,
                   post_data(conn.send_qps[q], part, immediate));
        }
      } else {
        schedule(now() + delay, static_cast<ComponentId>(conn.src_host), kNicPostMessage,
                 post_data(conn.send_qps[sequence % qps], u.bytes, immediate));
      }
      if (setup_.record_timeline)
        records_.posted.push_back({id, static_cast<uint32_t>(sequence), s.op,
                                   static_cast<uint32_t>(rank.iteration), u.bytes, now()});
    }
  }
  CollectiveStepRecord step;
  step.row = s.op;
  step.iteration = static_cast<uint32_t>(rank.iteration);
  step.rank = static_cast<uint32_t>(l.lane->rank);
  step.channel = static_cast<uint16_t>(l.lane->channel);
  step.lane = static_cast<uint16_t>(l.lane->lane);
  step.step = u.step;
  step.recv_peer = first_recv ? first_recv->src : -1;
  step.send_peer = first_send ? first_send->dst : -1;
  step.bytes = u.bytes;
  step.start = l.start;
  step.end = now();
  if (setup_.record_timeline) records_.steps.push_back(step);
  l.busy = false;
  if (++l.next == l.lane->units.size()) {
    lane_done(s, lane);
  } else {
    try_start(stream, lane);
  }
}

void GpuNode::lane_done(Stream& s, uint32_t lane) {
  const int slot = s.lanes[lane].slot;
  if (--s.ranks[slot].left == 0) rank_done(s, slot);
}

// A rank finished an iteration: it launches the next, or it is done with this size.
void GpuNode::rank_done(Stream& s, int slot) {
  Stream::Rank& r = s.ranks[slot];
  const CollectiveSpec& spec = setup_.specs[s.spec];
  records_.iterations.push_back(
      {s.op, static_cast<uint32_t>(r.iteration), static_cast<uint32_t>(r.rank), r.launched, now()});
  if (++r.iteration < spec.warmup + spec.iterations) {
    launch(s, slot);
    return;
  }
  records_.timings.push_back({s.op, static_cast<uint32_t>(r.rank), r.timed_start, now()});
  if (++s.ranks_done < s.ranks.size()) return;
  if (s.position + 1 == setup_.spec_ops[s.spec].size()) {
    release_work();
    return;
  }
  const int coordinator = setup_.spec_nodes[s.spec][0];
  schedule(now() + setup_.barrier_latency[s.spec], node_components_[coordinator], kBarrier,
           uint64_t{s.spec} << 32 | s.position);
}

void GpuNode::barrier(uint32_t spec, uint32_t position) {
  const std::vector<int>& nodes = setup_.spec_nodes[spec];
  if (++barrier_count_[spec] < static_cast<int>(nodes.size())) return;
  barrier_count_[spec] = 0;
  for (int v : nodes) {
    schedule(now() + setup_.barrier_latency[spec], node_components_[v], kOpStart,
             uint64_t{spec} << 32 | (position + 1));
  }
}

int64_t GpuNode::whole_messages(std::vector<int64_t>& parts, uint64_t sequence) {
  ++parts[sequence % parts.size()];
  return *std::min_element(parts.begin(), parts.end());
}

void GpuNode::message_arrived(uint32_t connection, uint32_t sequence) {
  RecvSide& r = recv_[connection];
  if (setup_.record_timeline &&
      setup_.connections[connection].transport == CollectiveTransport::Net) {
    records_.arrived.push_back({connection, sequence, 0, 0, 0, now()});
  }
  const int64_t ahead = static_cast<int64_t>(sequence) - r.arrived;
  if (ahead == 0) {
    ++r.arrived;
    r.early >>= 1;
    while (r.early & 1) {
      ++r.arrived;
      r.early >>= 1;
    }
  } else {
    r.early |= uint64_t{1} << ahead;
  }
  wake(r.waiter);
}

}  // namespace fabtwin
