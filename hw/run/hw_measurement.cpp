#include "hw/run/hw_measurement.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include "sim/atomic_file.h"
#include "sim/cli/hdf5_table.h"
#include "sim/cli/report.h"
#include "sim/hdf5_file.h"
#include "sim/statistics.h"

namespace fabtwin::hw {
namespace {

constexpr int64_t kPsPerNs = 1000;

void write_contents(const HwMeasurement& m, const std::filesystem::path& path) {
  Hdf5File h5(path.string());
  h5.attribute("fabtwin_version", std::string(kVersion));
  h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
  h5.attribute("source", std::string("hardware"));
  h5.attribute("scenario", m.scenario_text);
  h5.attribute("scenario_file", m.scenario_file);
  h5.attribute("seed", m.seed);
  h5.attribute("plan_hash", m.plan_hash);
  h5.attribute("transport", m.transport);
  h5.attribute("mapping", m.mapping);
  h5.attribute("ranks", int64_t{m.ranks});
  h5.attribute("wall_seconds", m.wall_seconds);
  h5.attribute("stop_reason", m.stop_reason);
  write_table(h5, "flows", m.flows);
  h5.group("hw");
  const auto write = [&](const std::string& name, const auto& rows) {
    write_table(h5, name, rows);
  };
  for_each_hw_table(m, write);
  if (!m.collectives.rows.empty()) {
    h5.group("collectives");
    for_each_collective_table(m.collectives, write);
  }
  for (const ObservationTable& t : m.observations) t.write(h5);
  // Written last: a file that has it was written whole by the run it names.
  h5.attribute("run_id", m.run_id);
  h5.close();
}

int64_t number(const nlohmann::json& j, const char* key, int rank, int64_t low) {
  if (!j.contains(key) || !j[key].is_number_integer() || j[key].get<int64_t>() < low) {
    throw std::runtime_error("rank " + std::to_string(rank) + "'s results: field " + key +
                             ": expected an integer of at least " + std::to_string(low) +
                             ", found " + (j.contains(key) ? j[key].dump() : "nothing"));
  }
  return j[key].get<int64_t>();
}

nlohmann::json timing_json(const MessageTiming& t) {
  return {
      {"flow", t.flow},           {"connection", t.connection},     {"bytes", t.bytes},
      {"posted_ns", t.posted_ns}, {"completed_ns", t.completed_ns}, {"received_ns", t.received_ns},
      {"completed", t.completed}};
}

MessageTiming timing_from(const nlohmann::json& j, int rank) {
  if (!j.is_object())
    throw std::runtime_error("rank " + std::to_string(rank) +
                             "'s results: a message is not an object");
  MessageTiming t;
  t.flow = static_cast<uint32_t>(number(j, "flow", rank, 0));
  t.connection = static_cast<uint32_t>(number(j, "connection", rank, 0));
  t.bytes = number(j, "bytes", rank, 0);
  t.posted_ns = number(j, "posted_ns", rank, -1);
  t.completed_ns = number(j, "completed_ns", rank, -1);
  // On the destination's clock from its own start, so possibly negative (`completed` says
  // whether it was received).
  t.received_ns = number(j, "received_ns", rank, std::numeric_limits<int64_t>::min());
  if (!j.contains("completed") || !j["completed"].is_boolean()) {
    throw std::runtime_error("rank " + std::to_string(rank) +
                             "'s results: field completed: expected true or false");
  }
  t.completed = j["completed"].get<bool>();
  return t;
}

const nlohmann::json& list(const nlohmann::json& j, const char* key, int rank) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_array()) {
    throw std::runtime_error("rank " + std::to_string(rank) + "'s results: field " + key +
                             ": expected a list");
  }
  return j[key];
}

}  // namespace

int64_t HwMeasurement::flows_completed() const {
  return std::count_if(flows.begin(), flows.end(), [](const FlowRecord& f) { return f.completed; });
}

nlohmann::json transport_result_json(const TransportResult& r) {
  nlohmann::json j;
  j["messages"] = nlohmann::json::array();
  for (const MessageTiming& t : r.messages) j["messages"].push_back(timing_json(t));
  j["received"] = nlohmann::json::array();
  for (const MessageTiming& t : r.received) j["received"].push_back(timing_json(t));
  j["connections"] = nlohmann::json::array();
  for (const ConnectionTiming& c : r.connections) {
    j["connections"].push_back({{"connection", c.connection},
                                {"bytes_sent", c.bytes_sent},
                                {"messages_completed", c.messages_completed},
                                {"latency_ns", c.latency_ns}});
  }
  j["properties"] = nlohmann::json::array();
  for (const auto& [name, value] : r.properties) j["properties"].push_back({name, value});
  return j;
}

TransportResult transport_result_from_json(const nlohmann::json& j, int rank) {
  TransportResult r;
  for (const nlohmann::json& t : list(j, "messages", rank))
    r.messages.push_back(timing_from(t, rank));
  for (const nlohmann::json& t : list(j, "received", rank))
    r.received.push_back(timing_from(t, rank));
  for (const nlohmann::json& c : list(j, "connections", rank)) {
    ConnectionTiming ct;
    ct.connection = static_cast<uint32_t>(number(c, "connection", rank, 0));
    ct.bytes_sent = number(c, "bytes_sent", rank, 0);
    ct.messages_completed = number(c, "messages_completed", rank, 0);
    for (const nlohmann::json& l : list(c, "latency_ns", rank)) {
      if (!l.is_number_integer()) {
        throw std::runtime_error("rank " + std::to_string(rank) +
                                 "'s results: field latency_ns: expected integers");
      }
      ct.latency_ns.push_back(l.get<int64_t>());
    }
    r.connections.push_back(std::move(ct));
  }
  for (const nlohmann::json& p : list(j, "properties", rank)) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string()) {
      throw std::runtime_error("rank " + std::to_string(rank) +
                               "'s results: field properties: expected [name, value] pairs");
    }
    r.properties.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
  }
  return r;
}

HwMeasurement assemble_measurement(const Plan& plan, const std::vector<FlowSpec>& flows,
                                   const std::vector<TransportResult>& results) {
  HwMeasurement m;
  m.ranks = plan.ranks;
  m.plan_hash = plan.hash;
  // Every planned message, keyed by (flow, connection): a flow has one message per connection.
  std::map<std::pair<uint32_t, uint32_t>, size_t> row_of;
  for (const PlannedMessage& pm : plan.messages) {
    const PlannedConnection& c = plan.connections.at(pm.connection);
    row_of[{pm.flow, pm.connection}] = m.messages.size();
    MessageRow row;
    row.flow = pm.flow;
    row.connection = pm.connection;
    row.src_host = c.src_host;
    row.dst_host = c.dst_host;
    row.src_rank = c.src_rank;
    row.dst_rank = c.dst_rank;
    row.qp = c.qp;
    row.bytes = pm.size.count;
    row.start = pm.start;
    m.messages.push_back(row);
  }
  const auto row = [&](const MessageTiming& t, int rank) -> MessageRow& {
    const auto it = row_of.find({t.flow, t.connection});
    if (it == row_of.end()) {
      throw std::runtime_error("rank " + std::to_string(rank) + " timed flow " +
                               std::to_string(t.flow) + " on connection " +
                               std::to_string(t.connection) + ", which the plan does not have");
    }
    return m.messages[it->second];
  };
  for (size_t rank = 0; rank < results.size(); ++rank) {
    const TransportResult& r = results[rank];
    for (const MessageTiming& t : r.messages) {
      MessageRow& x = row(t, static_cast<int>(rank));
      x.posted_ns = t.posted_ns;
      x.completed_ns = t.completed ? t.completed_ns : -1;
      x.completed = t.completed;
    }
    for (const MessageTiming& t : r.received) {
      if (!t.completed) continue;
      MessageRow& x = row(t, static_cast<int>(rank));
      x.received = true;
      x.received_ns = t.received_ns;
    }
    for (const auto& [name, value] : r.properties) {
      m.properties.push_back({"rank" + std::to_string(rank) + "." + name, value});
    }
  }
  // Flows: complete when every part is; finish at the last part's completion.
  std::map<uint32_t, FlowRecord> by_flow;
  for (const FlowSpec& f : flows) {
    FlowRecord& r = by_flow[f.id];
    r.spec = f;
    r.completed = true;
    for (int64_t* counter : {&r.packets_sent, &r.packets_retransmitted, &r.timeouts, &r.cnps_sent,
                             &r.cnps_received, &r.rate_cuts, &r.out_of_sequence, &r.naks_sent,
                             &r.sacks_sent, &r.duplicates, &r.max_reorder_depth}) {
      *counter = -1;  // per-flow counts hardware does not give (per-port ones are in /hw)
    }
  }
  // What the destinations saw, when they can tell (a TCP receiver can; an RDMA WRITE's
  // destination cannot, and its flows keep bytes_received -1).
  std::set<uint32_t> seen;
  for (const TransportResult& r : results) {
    for (const MessageTiming& t : r.received) seen.insert(t.flow);
  }
  for (const MessageRow& x : m.messages) {
    FlowRecord& r = by_flow.at(x.flow);
    r.completed = r.completed && x.completed;
    if (x.completed) r.finish = std::max(r.finish, Time{x.completed_ns * kPsPerNs});
    if (!seen.count(x.flow)) r.bytes_received = -1;
    if (x.received && r.bytes_received >= 0) {
      r.bytes_received += x.bytes;
      r.last_byte_received = std::max(r.last_byte_received, Time{x.received_ns * kPsPerNs});
    }
  }
  for (const FlowSpec& f : flows) m.flows.push_back(by_flow.at(f.id));
  // Connections: bytes and latency percentiles from their sources.
  std::vector<const ConnectionTiming*> timing(plan.connections.size(), nullptr);
  for (const TransportResult& r : results) {
    for (const ConnectionTiming& c : r.connections) {
      if (c.connection < timing.size()) timing[c.connection] = &c;
    }
  }
  for (const PlannedConnection& c : plan.connections) {
    QpRow q;
    q.connection = c.id;
    q.src_host = c.src_host;
    q.dst_host = c.dst_host;
    q.src_rank = c.src_rank;
    q.dst_rank = c.dst_rank;
    q.qp = c.qp;
    q.dscp = c.dscp;
    q.messages = std::count_if(plan.messages.begin(), plan.messages.end(),
                               [&](const PlannedMessage& pm) { return pm.connection == c.id; });
    if (const ConnectionTiming* t = timing[c.id]) {
      q.bytes_sent = t->bytes_sent;
      q.messages_completed = t->messages_completed;
      if (!t->latency_ns.empty()) {
        const std::vector<double> l(t->latency_ns.begin(), t->latency_ns.end());
        q.latency_p50_ns = static_cast<int64_t>(percentile(l, 50));
        q.latency_p99_ns = static_cast<int64_t>(percentile(l, 99));
        q.latency_p999_ns = static_cast<int64_t>(percentile(l, 99.9));
        q.latency_max_ns = static_cast<int64_t>(percentile(l, 100));
      }
    }
    m.qps.push_back(q);
  }
  m.stop_reason = m.flows_completed() == static_cast<int64_t>(m.flows.size()) ? "" : "deadline";
  return m;
}

void write_measurement_hdf5(const HwMeasurement& m, const std::filesystem::path& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) { write_contents(m, temp); });
}

nlohmann::json measurement_json(const HwMeasurement& m) {
  nlohmann::json j;
  j["fabtwin_version"] = kVersion;
  j["schema_version"] = kHdf5SchemaVersion;
  j["source"] = "hardware";
  j["run_id"] = m.run_id;
  j["scenario_file"] = m.scenario_file;
  j["plan_hash"] = m.plan_hash;
  j["transport"] = m.transport;
  j["mapping"] = m.mapping;
  j["ranks"] = m.ranks;
  j["wall_seconds"] = m.wall_seconds;
  j["stop_reason"] = m.stop_reason;
  j["flows"] = m.flows.size();
  j["flows_completed"] = m.flows_completed();
  const auto table = [&](const std::string& name, const auto& rows) {
    using R = typename std::decay_t<decltype(rows)>::value_type;
    const auto columns = columns_of<R>();
    nlohmann::json list = nlohmann::json::array();
    for (const R& r : rows) list.push_back(record_json(columns, r));
    j["tables"][name] = list;
  };
  table("flows", m.flows);
  for_each_hw_table(m, table);
  if (!m.collectives.rows.empty()) for_each_collective_table(m.collectives, table);
  for (const ObservationTable& t : m.observations) j["tables"][t.name] = t.json();
  return j;
}

}  // namespace fabtwin::hw
