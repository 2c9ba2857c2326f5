#include "models/fabric/distributed_result.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "sim/simulator.h"

namespace fabtwin {

inline void to_json(nlohmann::json& j, const Time& t) {
  j = t.ps;
}
inline void from_json(const nlohmann::json& j, Time& t) {
  t.ps = j.get<int64_t>();
}
inline void to_json(nlohmann::json& j, const Bytes& b) {
  j = b.count;
}
inline void from_json(const nlohmann::json& j, Bytes& b) {
  b.count = j.get<int64_t>();
}
inline void to_json(nlohmann::json& j, const BitsPerSec& r) {
  j = r.bps;
}
inline void from_json(const nlohmann::json& j, BitsPerSec& r) {
  r.bps = j.get<int64_t>();
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PriorityCounters, tx_packets, tx_bytes, drops, drop_bytes,
                                   drops_egress, drops_headroom, max_queue_bytes, ecn_marks,
                                   pause_sent, xon_sent, xoff_transitions, pause_received,
                                   xon_received, paused_time, cnp_sent, cnp_received)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PortRecord, node, switch_port, port, peer, rate, busy_time,
                                   counters)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FlowSpec, id, src, dst, size, start, dscp)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FlowRecord, spec, completed, finish, last_byte_received,
                                   bytes_received, packets_sent, packets_retransmitted, timeouts,
                                   cnps_sent, cnps_received, rate_cuts)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(QueueDepthSample, time, port, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PauseRecord, port, priority, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BufferRecord, node, buffer, shared_pool, headroom, max_used,
                                   headroom_overflows)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BufferSampleRecord, time, buffer, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RateSampleRecord, time, flow, rate_bps, target_bps, alpha)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankTiming, op, rank, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NetMessage, connection, sequence, op, iteration, bytes, time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CollectiveStepRecord, row, iteration, rank, channel, lane, step,
                                   recv_peer, send_peer, bytes, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CollectiveTransferRecord, row, iteration, channel, transport,
                                   src_rank, dst_rank, bytes, posted, arrived)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CollectiveIterationRecord, row, iteration, rank, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuNodeRecords, timings, iterations, steps, nvlink, posted,
                                   arrived)

std::string encode_result(const RunResult& r, const std::vector<uint64_t>& fingerprints,
                          const GpuNodeRecords& collectives) {
  const nlohmann::json j = {{"fingerprints", fingerprints},
                            {"collectives", collectives},
                            {"data_packets_sent", r.data_packets_sent},
                            {"connection_rate_cuts", r.connection_rate_cuts},
                            {"peak_packets_in_pool", r.peak_packets_in_pool},
                            {"flows", r.flows},
                            {"ports", r.ports},
                            {"queue_samples", r.queue_samples},
                            {"pauses", r.pauses},
                            {"buffers", r.buffers},
                            {"buffer_samples", r.buffer_samples},
                            {"rate_samples", r.rate_samples}};
  return j.dump();
}

namespace {
void add_counters(PriorityCounters& into, const PriorityCounters& c) {
  into.tx_packets += c.tx_packets;
  into.tx_bytes += c.tx_bytes;
  into.drops += c.drops;
  into.drop_bytes += c.drop_bytes;
  into.drops_egress += c.drops_egress;
  into.drops_headroom += c.drops_headroom;
  into.max_queue_bytes = std::max(into.max_queue_bytes, c.max_queue_bytes);
  into.ecn_marks += c.ecn_marks;
  into.pause_sent += c.pause_sent;
  into.xon_sent += c.xon_sent;
  into.xoff_transitions += c.xoff_transitions;
  into.pause_received += c.pause_received;
  into.xon_received += c.xon_received;
  into.paused_time += c.paused_time;
  into.cnp_sent += c.cnp_sent;
  into.cnp_received += c.cnp_received;
}
}  // namespace

// Rank 0's own result supplies everything every rank computes alike (scenario, topology,
// events, end time); the records each rank fills only for its own components are added up.
RunResult merge_results(const std::vector<std::string>& texts, uint64_t seed,
                        GpuNodeRecords& collectives) {
  RunResult r;
  std::vector<uint64_t> fingerprints;
  for (size_t rank = 0; rank < texts.size(); ++rank) {
    const nlohmann::json j = nlohmann::json::parse(texts[rank]);
    const auto parts = j["fingerprints"].get<std::vector<uint64_t>>();
    if (fingerprints.empty()) fingerprints.assign(parts.size(), 0);
    for (size_t i = 0; i < parts.size(); ++i) fingerprints[i] ^= parts[i];  // one non-zero each
    collectives.append(j["collectives"].get<GpuNodeRecords>());
    r.data_packets_sent += j["data_packets_sent"].get<int64_t>();
    r.connection_rate_cuts += j["connection_rate_cuts"].get<int64_t>();
    r.peak_packets_in_pool += j["peak_packets_in_pool"].get<int64_t>();
    const auto flows = j["flows"].get<std::vector<FlowRecord>>();
    const auto ports = j["ports"].get<std::vector<PortRecord>>();
    const auto buffers = j["buffers"].get<std::vector<BufferRecord>>();
    if (rank == 0) {
      r.flows = flows;
      r.ports = ports;
      r.buffers = buffers;
    } else {
      for (size_t f = 0; f < flows.size(); ++f) {
        FlowRecord& into = r.flows[f];
        const FlowRecord& from = flows[f];
        into.completed = into.completed || from.completed;
        into.finish = std::max(into.finish, from.finish);
        into.last_byte_received = std::max(into.last_byte_received, from.last_byte_received);
        into.bytes_received = std::max(into.bytes_received, from.bytes_received);
        into.packets_sent += from.packets_sent;
        into.packets_retransmitted += from.packets_retransmitted;
        into.timeouts += from.timeouts;
        into.cnps_sent += from.cnps_sent;
        into.cnps_received += from.cnps_received;
        into.rate_cuts += from.rate_cuts;
      }
      for (size_t p = 0; p < ports.size(); ++p) {
        r.ports[p].busy_time += ports[p].busy_time;
        for (int q = 0; q < kPriorities; ++q)
          add_counters(r.ports[p].counters[q], ports[p].counters[q]);
      }
      for (size_t b = 0; b < buffers.size(); ++b) {
        r.buffers[b].max_used = std::max(r.buffers[b].max_used, buffers[b].max_used);
        r.buffers[b].headroom_overflows += buffers[b].headroom_overflows;
      }
    }
    for (const auto& s : j["queue_samples"].get<std::vector<QueueDepthSample>>())
      r.queue_samples.push_back(s);
    for (const auto& p : j["pauses"].get<std::vector<PauseRecord>>()) r.pauses.push_back(p);
    for (const auto& s : j["buffer_samples"].get<std::vector<BufferSampleRecord>>())
      r.buffer_samples.push_back(s);
    for (const auto& s : j["rate_samples"].get<std::vector<RateSampleRecord>>())
      r.rate_samples.push_back(s);
  }
  // A single process lists samples switch by switch (ports are numbered in node order) and
  // pauses port by port; each switch's or port's own order came from one rank intact.
  std::vector<uint32_t> node_of_port(r.ports.size());
  for (size_t i = 1; i < r.ports.size(); ++i) {
    node_of_port[i] = node_of_port[i - 1] + (r.ports[i].node != r.ports[i - 1].node ? 1 : 0);
  }
  std::stable_sort(r.queue_samples.begin(), r.queue_samples.end(),
                   [&](const QueueDepthSample& a, const QueueDepthSample& b) {
                     return node_of_port[a.port] < node_of_port[b.port];
                   });
  std::stable_sort(r.pauses.begin(), r.pauses.end(),
                   [](const PauseRecord& a, const PauseRecord& b) { return a.port < b.port; });
  std::stable_sort(
      r.buffer_samples.begin(), r.buffer_samples.end(),
      [](const BufferSampleRecord& a, const BufferSampleRecord& b) { return a.buffer < b.buffer; });
  std::stable_sort(r.rate_samples.begin(), r.rate_samples.end(),
                   [](const RateSampleRecord& a, const RateSampleRecord& b) {
                     return a.time < b.time || (a.time == b.time && a.flow < b.flow);
                   });
  r.fingerprint = Simulator::combine_fingerprints(seed, fingerprints);
  return r;
}

}  // namespace fabtwin
