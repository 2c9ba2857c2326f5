// The HDF5 result file; layout documented in docs/hdf5-schema.md (schema version 4).
#include <cstring>

#include "sim/cli/atomic_file.h"
#include "sim/cli/nccl_table.h"
#include "sim/cli/report.h"
#include "sim/hdf5_file.h"

namespace fabtwin {
namespace {

constexpr size_t kNameLength = 32;

struct FlowRow {
  uint32_t id;
  int32_t src, dst, dscp;
  int64_t size_bytes, start_ps, finish_ps, fct_ps;
  double goodput_bps;
  uint8_t completed;
  int64_t bytes_received, last_byte_ps, packets_sent, packets_retransmitted, timeouts;
  int64_t cnps_sent, cnps_received, rate_cuts;
};

struct RateRow {
  int64_t time_ps;
  uint32_t flow;
  int64_t rate_bps, target_bps;
  double alpha;
};

struct PortRow {
  char node[kNameLength];
  uint32_t port;
  char peer[kNameLength];
  uint8_t is_switch;
  int64_t rate_bps, busy_ps, tx_packets, tx_bytes, drops, max_queue_bytes;
  int64_t pause_sent, pause_received, paused_ps, ecn_marks, drops_headroom, drops_egress;
};

struct PortPriorityRow {
  uint32_t port_index;
  uint8_t priority;
  int64_t tx_packets, tx_bytes, drops, drop_bytes, drops_egress, drops_headroom, max_queue_bytes,
      ecn_marks, pause_sent, xon_sent, xoff_transitions, pause_received, xon_received, paused_ps,
      cnp_sent, cnp_received;
};

struct PauseRow {
  uint32_t port_index;
  uint8_t priority;
  int64_t start_ps, end_ps;
};

struct BufferRow {
  char node[kNameLength];
  int64_t buffer_bytes, shared_pool_bytes, headroom_bytes, max_used_bytes, headroom_overflows;
};

struct BufferSampleRow {
  int64_t time_ps;
  uint32_t buffer_index;
  int64_t bytes;
};

struct QueueRow {
  int64_t time_ps;
  uint32_t port_index;
  int64_t bytes;
};

// The short words of a collective (op, algorithm, protocol, type, redop).
constexpr size_t kWordLength = 16;

struct CollectiveResultRow {
  uint32_t generator;
  char op[kWordLength];
  char algorithm[kWordLength];
  char protocol[kWordLength];
  int64_t size, count;
  char type[kWordLength];
  char redop[kWordLength];
  int32_t root, ranks, channels, iterations;
  double time_us, algbw, busbw;
  int64_t start_ps, end_ps;
};

struct RankGpuRow {
  uint32_t result_index, rank, gpu_index;
};

struct GpuRow {
  char name[kNameLength];
};

struct CollectiveIterationRow {
  uint32_t result_index, iteration, rank;
  int64_t start_ps, end_ps;
};

struct CollectiveStepRow {
  uint32_t result_index, iteration, rank;
  uint16_t channel, lane;
  uint32_t step;
  int32_t recv_peer, send_peer;
  int64_t bytes, start_ps, end_ps;
};

struct CollectiveTransferRow {
  uint32_t result_index, iteration;
  uint16_t channel;
  uint8_t transport;
  uint32_t src_rank, dst_rank;
  int64_t bytes, posted_ps, arrived_ps;
};

template <size_t N>
void copy_name(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N));
}

#define FIELD(Row, member, type)         \
  Hdf5Field {                            \
#member, offsetof(Row, member), type \
  }

// /collectives: the nccl-tests rows, which GPU each rank ran on, and the step and transfer
// timelines beneath them.
void write_collectives(Hdf5File& h5, const RunResult& r) {
  const hid_t i32 = H5T_NATIVE_INT32, i64 = H5T_NATIVE_INT64, u32 = H5T_NATIVE_UINT32,
              u16 = H5T_NATIVE_UINT16, u8 = H5T_NATIVE_UINT8, f64 = H5T_NATIVE_DOUBLE;
  const hid_t word = h5.fixed_string(kWordLength), name = h5.fixed_string(kNameLength);
  h5.group("collectives");

  std::vector<CollectiveResultRow> results;
  std::vector<RankGpuRow> rank_gpus;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRow& c = r.collectives[i];
    CollectiveResultRow row{};
    row.generator = c.generator;
    copy_name(row.op, c.op);
    copy_name(row.algorithm, c.algorithm);
    copy_name(row.protocol, c.protocol);
    row.size = c.size;
    row.count = c.count;
    copy_name(row.type, c.type);
    copy_name(row.redop, nccl_redop_text(c.op, c.redop));
    row.root = c.root;
    row.ranks = c.ranks;
    row.channels = c.channels;
    row.iterations = c.iterations;
    row.time_us = c.time_us;
    row.algbw = c.algbw;
    row.busbw = c.busbw;
    row.start_ps = c.start.ps;
    row.end_ps = c.end.ps;
    results.push_back(row);
    for (size_t rank = 0; rank < c.gpus.size(); ++rank) {
      rank_gpus.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(rank), c.gpus[rank]});
    }
  }
  h5.table("collectives/results", results,
           {FIELD(CollectiveResultRow, generator, u32), FIELD(CollectiveResultRow, op, word),
            FIELD(CollectiveResultRow, algorithm, word), FIELD(CollectiveResultRow, protocol, word),
            FIELD(CollectiveResultRow, size, i64), FIELD(CollectiveResultRow, count, i64),
            FIELD(CollectiveResultRow, type, word), FIELD(CollectiveResultRow, redop, word),
            FIELD(CollectiveResultRow, root, i32), FIELD(CollectiveResultRow, ranks, i32),
            FIELD(CollectiveResultRow, channels, i32), FIELD(CollectiveResultRow, iterations, i32),
            FIELD(CollectiveResultRow, time_us, f64), FIELD(CollectiveResultRow, algbw, f64),
            FIELD(CollectiveResultRow, busbw, f64), FIELD(CollectiveResultRow, start_ps, i64),
            FIELD(CollectiveResultRow, end_ps, i64)});
  h5.table("collectives/rank_gpus", rank_gpus,
           {FIELD(RankGpuRow, result_index, u32), FIELD(RankGpuRow, rank, u32),
            FIELD(RankGpuRow, gpu_index, u32)});

  std::vector<GpuRow> gpus(r.gpus.size());
  for (size_t i = 0; i < r.gpus.size(); ++i) copy_name(gpus[i].name, r.gpus[i]);
  h5.table("collectives/gpus", gpus, {FIELD(GpuRow, name, name)});

  std::vector<CollectiveIterationRow> iterations;
  iterations.reserve(r.collective_iterations.size());
  for (const CollectiveIterationRecord& i : r.collective_iterations) {
    iterations.push_back({i.row, i.iteration, i.rank, i.start.ps, i.end.ps});
  }
  h5.table(
      "collectives/iterations", iterations,
      {FIELD(CollectiveIterationRow, result_index, u32),
       FIELD(CollectiveIterationRow, iteration, u32), FIELD(CollectiveIterationRow, rank, u32),
       FIELD(CollectiveIterationRow, start_ps, i64), FIELD(CollectiveIterationRow, end_ps, i64)});

  std::vector<CollectiveStepRow> steps;
  steps.reserve(r.collective_steps.size());
  for (const CollectiveStepRecord& s : r.collective_steps) {
    steps.push_back({s.row, s.iteration, s.rank, s.channel, s.lane, s.step, s.recv_peer,
                     s.send_peer, s.bytes, s.start.ps, s.end.ps});
  }
  h5.table("collectives/steps", steps,
           {FIELD(CollectiveStepRow, result_index, u32), FIELD(CollectiveStepRow, iteration, u32),
            FIELD(CollectiveStepRow, rank, u32), FIELD(CollectiveStepRow, channel, u16),
            FIELD(CollectiveStepRow, lane, u16), FIELD(CollectiveStepRow, step, u32),
            FIELD(CollectiveStepRow, recv_peer, i32), FIELD(CollectiveStepRow, send_peer, i32),
            FIELD(CollectiveStepRow, bytes, i64), FIELD(CollectiveStepRow, start_ps, i64),
            FIELD(CollectiveStepRow, end_ps, i64)});

  std::vector<CollectiveTransferRow> transfers;
  transfers.reserve(r.collective_transfers.size());
  for (const CollectiveTransferRecord& t : r.collective_transfers) {
    transfers.push_back({t.row, t.iteration, t.channel, static_cast<uint8_t>(t.transport),
                         t.src_rank, t.dst_rank, t.bytes, t.posted.ps, t.arrived.ps});
  }
  h5.table(
      "collectives/transfers", transfers,
      {FIELD(CollectiveTransferRow, result_index, u32),
       FIELD(CollectiveTransferRow, iteration, u32), FIELD(CollectiveTransferRow, channel, u16),
       FIELD(CollectiveTransferRow, transport, u8), FIELD(CollectiveTransferRow, src_rank, u32),
       FIELD(CollectiveTransferRow, dst_rank, u32), FIELD(CollectiveTransferRow, bytes, i64),
       FIELD(CollectiveTransferRow, posted_ps, i64),
       FIELD(CollectiveTransferRow, arrived_ps, i64)});
}

void write_contents(const RunResult& r, const std::filesystem::path& path) {
  Hdf5File h5(path.string());
  h5.attribute("fabtwin_version", std::string(kVersion));
  h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
  h5.attribute("source", std::string("simulation"));
  h5.attribute("scenario", r.scenario_text);
  h5.attribute("scenario_file", r.scenario_file);
  h5.attribute("seed", r.seed);
  h5.attribute("fingerprint", hex64(r.fingerprint));
  h5.attribute("events", r.events);
  h5.attribute("end_time_ps", r.end_time.ps);
  h5.attribute("last_event_time_ps", r.last_event_time.ps);
  h5.attribute("reached_end", int64_t{r.reached_end ? 1 : 0});
  h5.attribute("data_packets_sent", r.data_packets_sent);
  h5.attribute("wall_seconds", r.wall_seconds);
  h5.attribute("congestion_control", r.congestion_control);

  std::vector<FlowRow> flows;
  flows.reserve(r.flows.size());
  for (const FlowRecord& f : r.flows) {
    flows.push_back({f.spec.id, f.spec.src, f.spec.dst, f.spec.dscp, f.spec.size.count,
                     f.spec.start.ps, f.completed ? f.finish.ps : -1, f.completed ? f.fct().ps : -1,
                     f.completed ? f.goodput_bps() : 0.0, static_cast<uint8_t>(f.completed),
                     f.bytes_received, f.last_byte_received.ps, f.packets_sent,
                     f.packets_retransmitted, f.timeouts, f.cnps_sent, f.cnps_received,
                     f.rate_cuts});
  }
  const hid_t i32 = H5T_NATIVE_INT32, i64 = H5T_NATIVE_INT64, u32 = H5T_NATIVE_UINT32,
              u8 = H5T_NATIVE_UINT8, f64 = H5T_NATIVE_DOUBLE;
  h5.table(
      "flows", flows,
      {FIELD(FlowRow, id, u32), FIELD(FlowRow, src, i32), FIELD(FlowRow, dst, i32),
       FIELD(FlowRow, dscp, i32), FIELD(FlowRow, size_bytes, i64), FIELD(FlowRow, start_ps, i64),
       FIELD(FlowRow, finish_ps, i64), FIELD(FlowRow, fct_ps, i64),
       FIELD(FlowRow, goodput_bps, f64), FIELD(FlowRow, completed, u8),
       FIELD(FlowRow, bytes_received, i64), FIELD(FlowRow, last_byte_ps, i64),
       FIELD(FlowRow, packets_sent, i64), FIELD(FlowRow, packets_retransmitted, i64),
       FIELD(FlowRow, timeouts, i64), FIELD(FlowRow, cnps_sent, i64),
       FIELD(FlowRow, cnps_received, i64), FIELD(FlowRow, rate_cuts, i64)});

  std::vector<RateRow> rates;
  rates.reserve(r.rate_samples.size());
  for (const RateSampleRecord& s : r.rate_samples) {
    rates.push_back({s.time.ps, s.flow, s.rate_bps, s.target_bps, s.alpha});
  }
  h5.table("qp_rates", rates,
           {FIELD(RateRow, time_ps, i64), FIELD(RateRow, flow, u32), FIELD(RateRow, rate_bps, i64),
            FIELD(RateRow, target_bps, i64), FIELD(RateRow, alpha, f64)});

  std::vector<PortRow> ports;
  std::vector<PortPriorityRow> priorities;
  for (size_t i = 0; i < r.ports.size(); ++i) {
    const PortRecord& p = r.ports[i];
    PortRow row{};
    copy_name(row.node, p.node);
    row.port = p.port;
    copy_name(row.peer, p.peer);
    row.is_switch = p.switch_port ? 1 : 0;
    row.rate_bps = p.rate.bps;
    row.busy_ps = p.busy_time.ps;
    row.tx_packets = p.tx_packets();
    row.tx_bytes = p.tx_bytes();
    row.drops = p.drops();
    row.max_queue_bytes = p.max_queue_bytes();
    row.pause_sent = p.total(&PriorityCounters::pause_sent);
    row.pause_received = p.total(&PriorityCounters::pause_received);
    row.paused_ps = p.total(&PriorityCounters::paused_time).ps;
    row.ecn_marks = p.total(&PriorityCounters::ecn_marks);
    row.drops_headroom = p.total(&PriorityCounters::drops_headroom);
    row.drops_egress = p.total(&PriorityCounters::drops_egress);
    ports.push_back(row);
    for (int prio = 0; prio < kPriorities; ++prio) {
      const PriorityCounters& c = p.counters[prio];
      if (c.tx_packets == 0 && c.drops == 0 && c.pause_sent == 0 && c.pause_received == 0 &&
          c.cnp_received == 0) {
        continue;
      }
      priorities.push_back({static_cast<uint32_t>(i), static_cast<uint8_t>(prio), c.tx_packets,
                            c.tx_bytes, c.drops, c.drop_bytes, c.drops_egress, c.drops_headroom,
                            c.max_queue_bytes, c.ecn_marks, c.pause_sent, c.xon_sent,
                            c.xoff_transitions, c.pause_received, c.xon_received, c.paused_time.ps,
                            c.cnp_sent, c.cnp_received});
    }
  }
  const hid_t name = h5.fixed_string(kNameLength);
  h5.table(
      "ports", ports,
      {FIELD(PortRow, node, name), FIELD(PortRow, port, u32), FIELD(PortRow, peer, name),
       FIELD(PortRow, is_switch, u8), FIELD(PortRow, rate_bps, i64), FIELD(PortRow, busy_ps, i64),
       FIELD(PortRow, tx_packets, i64), FIELD(PortRow, tx_bytes, i64), FIELD(PortRow, drops, i64),
       FIELD(PortRow, max_queue_bytes, i64), FIELD(PortRow, pause_sent, i64),
       FIELD(PortRow, pause_received, i64), FIELD(PortRow, paused_ps, i64),
       FIELD(PortRow, ecn_marks, i64), FIELD(PortRow, drops_headroom, i64),
       FIELD(PortRow, drops_egress, i64)});
  h5.table(
      "port_priority", priorities,
      {FIELD(PortPriorityRow, port_index, u32), FIELD(PortPriorityRow, priority, u8),
       FIELD(PortPriorityRow, tx_packets, i64), FIELD(PortPriorityRow, tx_bytes, i64),
       FIELD(PortPriorityRow, drops, i64), FIELD(PortPriorityRow, drop_bytes, i64),
       FIELD(PortPriorityRow, drops_egress, i64), FIELD(PortPriorityRow, drops_headroom, i64),
       FIELD(PortPriorityRow, max_queue_bytes, i64), FIELD(PortPriorityRow, ecn_marks, i64),
       FIELD(PortPriorityRow, pause_sent, i64), FIELD(PortPriorityRow, xon_sent, i64),
       FIELD(PortPriorityRow, xoff_transitions, i64), FIELD(PortPriorityRow, pause_received, i64),
       FIELD(PortPriorityRow, xon_received, i64), FIELD(PortPriorityRow, paused_ps, i64),
       FIELD(PortPriorityRow, cnp_sent, i64), FIELD(PortPriorityRow, cnp_received, i64)});

  std::vector<PauseRow> pauses;
  for (const PauseRecord& p : r.pauses)
    pauses.push_back({p.port, p.priority, p.start.ps, p.end.ps});
  h5.table("pfc_pauses", pauses,
           {FIELD(PauseRow, port_index, u32), FIELD(PauseRow, priority, u8),
            FIELD(PauseRow, start_ps, i64), FIELD(PauseRow, end_ps, i64)});

  std::vector<BufferRow> buffers;
  for (const BufferRecord& b : r.buffers) {
    BufferRow row{};
    copy_name(row.node, b.node);
    row.buffer_bytes = b.buffer;
    row.shared_pool_bytes = b.shared_pool;
    row.headroom_bytes = b.headroom;
    row.max_used_bytes = b.max_used;
    row.headroom_overflows = b.headroom_overflows;
    buffers.push_back(row);
  }
  h5.table("buffers", buffers,
           {FIELD(BufferRow, node, name), FIELD(BufferRow, buffer_bytes, i64),
            FIELD(BufferRow, shared_pool_bytes, i64), FIELD(BufferRow, headroom_bytes, i64),
            FIELD(BufferRow, max_used_bytes, i64), FIELD(BufferRow, headroom_overflows, i64)});
  std::vector<BufferSampleRow> occupancy;
  for (const BufferSampleRecord& s : r.buffer_samples)
    occupancy.push_back({s.time.ps, s.buffer, s.bytes});
  h5.table("buffer_occupancy", occupancy,
           {FIELD(BufferSampleRow, time_ps, i64), FIELD(BufferSampleRow, buffer_index, u32),
            FIELD(BufferSampleRow, bytes, i64)});

  std::vector<QueueRow> samples;
  samples.reserve(r.queue_samples.size());
  for (const QueueDepthSample& s : r.queue_samples) samples.push_back({s.time.ps, s.port, s.bytes});
  h5.table("queue_depth", samples,
           {FIELD(QueueRow, time_ps, i64), FIELD(QueueRow, port_index, u32),
            FIELD(QueueRow, bytes, i64)});
  if (!r.collectives.empty()) write_collectives(h5, r);
  h5.close();
}

#undef FIELD

}  // namespace

void write_hdf5(const RunResult& r, const std::filesystem::path& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) { write_contents(r, temp); });
}

}  // namespace fabtwin
