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

// A record travels as the array of its stored fields, in table order.
template <Record R>
void to_json(nlohmann::json& j, const R& r) {
  j = nlohmann::json::array();
  for_each_field<R>([&](const auto& f) {
    if constexpr (is_stored<decltype(f)>) j.push_back(nlohmann::json(r.*f.member));
  });
}
template <Record R>
void from_json(const nlohmann::json& j, R& r) {
  size_t i = 0;
  for_each_field<R>([&](const auto& f) {
    if constexpr (is_stored<decltype(f)>) j.at(i++).get_to(r.*f.member);
  });
}

// A port's counters travel as the array of its eight priorities' records.
void to_json(nlohmann::json& j, const PortCounters& c) {
  j = nlohmann::json::array();
  for (const PriorityCounters& p : c) j.push_back(nlohmann::json(p));
}
void from_json(const nlohmann::json& j, PortCounters& c) {
  PortCounters::Array all{};
  for (size_t p = 0; p < all.size(); ++p) j.at(p).get_to(all[p]);
  c = all;
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankTiming, op, rank, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(NetMessage, connection, sequence, op, iteration, bytes, time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuNodeRecords, timings, iterations, steps, nvlink, posted,
                                   arrived)

std::string encode_result(const RunResult& r, const std::vector<uint64_t>& fingerprints,
                          const GpuNodeRecords& collectives) {
  const nlohmann::json j = {{"fingerprints", fingerprints},
                            {"collectives", collectives},
                            {"data_packets_sent", r.data_packets_sent},
                            {"connection_rate_cuts", r.connection_rate_cuts},
                            {"flowlet_moves", r.flowlet_moves},
                            {"peak_packets_in_pool", r.peak_packets_in_pool},
                            {"flows", r.flows},
                            {"ports", r.ports},
                            {"queue_samples", r.queue_samples},
                            {"link_samples", r.link_samples},
                            {"pauses", r.pauses},
                            {"buffers", r.buffers},
                            {"buffer_samples", r.buffer_samples},
                            {"rate_samples", r.rate_samples}};
  return j.dump();
}

namespace {
// Adds another rank's records into this rank's, record by record, each field by its rule.
template <class R>
void merge_records(std::vector<R>& into, const std::vector<R>& from) {
  for (size_t i = 0; i < into.size(); ++i) merge_record(into[i], from[i]);
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
    r.flowlet_moves += j["flowlet_moves"].get<int64_t>();
    r.peak_packets_in_pool += j["peak_packets_in_pool"].get<int64_t>();
    const auto flows = j["flows"].get<std::vector<FlowRecord>>();
    const auto ports = j["ports"].get<std::vector<PortRecord>>();
    const auto buffers = j["buffers"].get<std::vector<BufferRecord>>();
    if (rank == 0) {
      r.flows = flows;
      r.ports = ports;
      r.buffers = buffers;
    } else {
      merge_records(r.flows, flows);
      merge_records(r.ports, ports);
      merge_records(r.buffers, buffers);
    }
    for (const auto& s : j["queue_samples"].get<std::vector<QueueDepthSample>>())
      r.queue_samples.push_back(s);
    for (const auto& s : j["link_samples"].get<std::vector<LinkUtilizationSample>>())
      r.link_samples.push_back(s);
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
  std::stable_sort(r.link_samples.begin(), r.link_samples.end(),
                   [&](const LinkUtilizationSample& a, const LinkUtilizationSample& b) {
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
