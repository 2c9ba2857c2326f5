#include "sim/cli/trace.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "sim/atomic_file.h"
#include "sim/utf8_text.h"

namespace fabtwin {
namespace {

// Trace-event times are microseconds; the simulator's are integer picoseconds.
double trace_us(int64_t ps) {
  return static_cast<double>(ps) / 1e6;
}

// Binary units, as NCCL sizes are written: "1 MiB", "512 KiB", "1.5 GiB", "1500 B".
std::string binary_size_text(int64_t bytes) {
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20}, {"KiB", int64_t{1} << 10}};
  for (const auto& [unit, scale] : kUnits) {
    if (bytes < scale) continue;
    char buf[48];
    if (bytes % scale == 0) {
      std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(bytes / scale), unit);
    } else {
      std::snprintf(buf, sizeof buf, "%.3g %s", static_cast<double>(bytes) / scale, unit);
    }
    return buf;
  }
  return std::to_string(bytes) + " B";
}

const char* transport_text(CollectiveTransport t) {
  switch (t) {
    case CollectiveTransport::NvLink:
      return "nvlink";
    case CollectiveTransport::Net:
      return "net";
    case CollectiveTransport::None:
      break;
  }
  return "local";
}

struct TraceEvent {
  int pid = 0;
  int tid = 0;
  bool metadata = false;
  int64_t ts_ps = 0;
  nlohmann::json json;
};

TraceEvent metadata(const char* what, int pid, int tid, const std::string& name) {
  return {pid,
          tid,
          true,
          0,
          {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}}};
}

TraceEvent complete(int pid, int tid, const std::string& name, Time start, Time end,
                    nlohmann::json args) {
  return {pid,
          tid,
          false,
          start.ps,
          {{"name", name},
           {"ph", "X"},
           {"pid", pid},
           {"tid", tid},
           {"ts", trace_us(start.ps)},
           {"dur", trace_us(end.ps - start.ps)},
           {"args", std::move(args)}}};
}

// Slices on one trace thread must nest; messages on one connection overlap (several are in
// flight at once). Each interval goes to the first of its group's lanes that is free by its start.
class LanePacker {
 public:
  int lane(const std::tuple<uint32_t, uint32_t, uint16_t>& group, Time start, Time end) {
    std::vector<Time>& ends = lane_ends_[group];
    for (size_t i = 0; i < ends.size(); ++i) {
      if (ends[i] <= start) {
        ends[i] = end;
        return static_cast<int>(i);
      }
    }
    ends.push_back(end);
    return static_cast<int>(ends.size()) - 1;
  }

 private:
  std::map<std::tuple<uint32_t, uint32_t, uint16_t>, std::vector<Time>> lane_ends_;
};

std::string gpu_name(const RunResult& r, uint32_t gpu) {
  return gpu < r.gpus.size() ? r.gpus[gpu] : "gpu" + std::to_string(gpu);
}

// The GPU that rank `rank` of row `row` ran on, or -1 when the records do not say.
int64_t gpu_of(const RunResult& r, uint32_t row, uint32_t rank) {
  if (row >= r.collectives.size()) return -1;
  const std::vector<uint32_t>& gpus = r.collectives[row].gpus;
  return rank < gpus.size() ? gpus[rank] : -1;
}

TraceEvent instant(int pid, const std::string& name, Time at, nlohmann::json args) {
  return {pid,
          0,
          false,
          at.ps,
          {{"name", name},
           {"ph", "i"},
           {"s", "g"},
           {"pid", pid},
           {"tid", 0},
           {"ts", trace_us(at.ps)},
           {"args", std::move(args)}}};
}

// The links of the scenario's events: a thread per link with its down intervals (a link still
// down at the end stays down to the last event), in the process that also shows the deadlocks.
void add_link_events(const RunResult& r, std::vector<TraceEvent>& events) {
  if (r.link_events.empty() && r.deadlock.deadlocks.empty()) return;
  events.push_back(metadata("process_name", kTraceLinksPid, 0, "link failures and deadlocks"));
  std::map<std::pair<std::string, std::string>, int> tid_of;
  std::map<int, Time> down_since;
  for (const LinkEventRecord& e : r.link_events) {
    const auto [it, added] = tid_of.try_emplace({e.a, e.b}, static_cast<int>(tid_of.size()) + 1);
    const int tid = it->second;
    if (added) events.push_back(metadata("thread_name", kTraceLinksPid, tid, e.a + " - " + e.b));
    if (!e.up) {
      down_since.try_emplace(tid, e.time);
    } else if (const auto d = down_since.find(tid); d != down_since.end()) {
      events.push_back(complete(kTraceLinksPid, tid, "down", d->second, e.time, {}));
      down_since.erase(d);
    }
  }
  for (const auto& [tid, since] : down_since) {
    events.push_back(complete(kTraceLinksPid, tid, "down", since,
                              std::max(since, r.last_event_time), {{"until", "the end"}}));
  }
}

// The network: one process per node (switch or NIC) that has something to show, a thread per
// (port, priority) with its PFC pause intervals and, for a deadlock's cycle, the time each of
// its queues was stuck; a counter track per port with its queue depth samples; the links that
// failed; and an instant per deadlock with its cycle.
void add_network(const RunResult& r, std::vector<TraceEvent>& events) {
  add_link_events(r, events);
  std::map<std::string, int> pid_of_node;  // numbered in the order of /ports
  std::vector<int> pid_of_port(r.ports.size());
  for (size_t i = 0; i < r.ports.size(); ++i) {
    const auto [it, added] = pid_of_node.try_emplace(
        r.ports[i].node, trace_network_pid(static_cast<uint32_t>(pid_of_node.size())));
    pid_of_port[i] = it->second;
  }
  std::set<int> shown;
  auto show_node = [&](size_t port) {
    const int pid = pid_of_port[port];
    if (shown.insert(pid).second) {
      const PortRecord& p = r.ports[port];
      events.push_back(metadata("process_name", pid, 0,
                                std::string(p.switch_port ? "switch " : "nic ") + p.node));
    }
    return pid;
  };
  auto port_text = [&](size_t port) {
    return "port " + std::to_string(r.ports[port].port) + " → " + r.ports[port].peer;
  };
  std::set<std::pair<size_t, int>> pause_threads;
  // The port of a node by name and port number (a deadlock's queues name them so).
  std::map<std::pair<std::string, uint32_t>, size_t> port_row;
  std::set<std::pair<int, int>> stuck_threads;
  for (size_t i = 0; i < r.ports.size(); ++i) port_row[{r.ports[i].node, r.ports[i].port}] = i;
  for (size_t d = 0; d < r.deadlock.deadlocks.size(); ++d) {
    const DeadlockRecord& dl = r.deadlock.deadlocks[d];
    nlohmann::json cycle = nlohmann::json::array();
    for (const DeadlockQueueRecord& q : r.deadlock.cycles) {
      if (q.deadlock != d) continue;
      cycle.push_back(q.node + " port " + std::to_string(q.port) + " -> " + q.peer + " p" +
                      std::to_string(q.priority));
      const auto row = port_row.find({q.node, q.port});
      if (row == port_row.end()) continue;
      const int pid = show_node(row->second);
      const int tid = trace_stuck_tid(q.port, q.priority);
      if (stuck_threads.insert({pid, tid}).second) {
        events.push_back(metadata(
            "thread_name", pid, tid,
            port_text(row->second) + " · priority " + std::to_string(q.priority) + " · stuck"));
      }
      events.push_back(complete(pid, tid, "stuck: deadlock " + std::to_string(d + 1), q.stuck_since,
                                dl.detected_at, {{"bytes", q.bytes}, {"frames", q.frames}}));
    }
    events.push_back(instant(kTraceLinksPid, "deadlock " + std::to_string(d + 1), dl.detected_at,
                             {{"cycle", std::move(cycle)},
                              {"formed_at_us", trace_us(dl.formed_at.ps)},
                              {"bytes_stranded", dl.bytes_stranded},
                              {"flows", dl.flows}}));
  }
  for (const PauseRecord& pause : r.pauses) {
    if (pause.port >= r.ports.size()) continue;
    const int pid = show_node(pause.port);
    const int tid = trace_pause_tid(r.ports[pause.port].port, pause.priority);
    pause_threads.insert({pause.port, pause.priority});
    events.push_back(complete(pid, tid, "paused p" + std::to_string(pause.priority), pause.start,
                              pause.end, {{"port", port_text(pause.port)}}));
  }
  for (const auto& [port, priority] : pause_threads) {
    events.push_back(metadata("thread_name", pid_of_port[port],
                              trace_pause_tid(r.ports[port].port, priority),
                              port_text(port) + " · priority " + std::to_string(priority)));
  }
  for (const QueueDepthSample& q : r.queue_samples) {
    if (q.port >= r.ports.size()) continue;
    const int pid = show_node(q.port);
    events.push_back({pid,
                      0,
                      false,
                      q.time.ps,
                      {{"name", "queue " + port_text(q.port)},
                       {"ph", "C"},
                       {"pid", pid},
                       {"tid", 0},
                       {"ts", trace_us(q.time.ps)},
                       {"args", {{"bytes", q.bytes}}}}});
  }
}

}  // namespace

nlohmann::json trace_json(const RunResult& r) {
  std::vector<TraceEvent> events;

  // The rows: one thread per traffic generator (rows of different generators may overlap).
  std::set<uint32_t> generators;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRow& c = r.collectives[i];
    generators.insert(c.generator);
    events.push_back(complete(kTraceRowsPid, static_cast<int>(c.generator) + 1,
                              c.op + " " + binary_size_text(c.size) + " " + c.algorithm, c.start,
                              c.end,
                              {{"row", i},
                               {"generator", c.generator},
                               {"size", c.size},
                               {"count", c.count},
                               {"type", c.type},
                               {"ranks", c.ranks},
                               {"channels", c.channels},
                               {"protocol", c.protocol},
                               {"iterations", c.iterations},
                               {"time_us", c.time_us},
                               {"algbw", c.algbw},
                               {"busbw", c.busbw}}));
  }
  if (!r.collectives.empty()) {
    events.push_back(metadata("process_name", kTraceRowsPid, 0, "collectives"));
  }
  for (uint32_t g : generators) {
    events.push_back(metadata("thread_name", kTraceRowsPid, static_cast<int>(g) + 1,
                              "traffic[" + std::to_string(g) + "]"));
  }

  // One process per GPU, named by its rank when it has the same rank in every row.
  std::map<uint32_t, std::set<uint32_t>> ranks_of_gpu;
  for (const CollectiveRow& c : r.collectives) {
    for (size_t rank = 0; rank < c.gpus.size(); ++rank) {
      ranks_of_gpu[c.gpus[rank]].insert(static_cast<uint32_t>(rank));
    }
  }
  for (const auto& [gpu, ranks] : ranks_of_gpu) {
    const std::string name =
        ranks.size() == 1 ? "rank " + std::to_string(*ranks.begin()) + " · " + gpu_name(r, gpu)
                          : gpu_name(r, gpu);
    events.push_back(metadata("process_name", trace_gpu_pid(gpu), 0, name));
  }
  std::set<std::pair<int, int>> step_threads;  // (pid, tid)
  std::map<std::pair<int, int>, std::string> step_thread_names;
  for (const CollectiveStepRecord& s : r.collective_steps) {
    const int64_t gpu = gpu_of(r, s.row, s.rank);
    if (gpu < 0) continue;
    const int pid = trace_gpu_pid(static_cast<uint32_t>(gpu));
    const int tid = trace_step_tid(s.channel, s.lane);
    step_thread_names[{pid, tid}] =
        "channel " + std::to_string(s.channel) + (s.lane == 1 ? " bcast" : "");
    std::string name = "step " + std::to_string(s.step);
    if (s.recv_peer >= 0) name += " recv " + std::to_string(s.recv_peer);
    if (s.recv_peer >= 0 && s.send_peer >= 0) name += " →";
    if (s.send_peer >= 0) name += " send " + std::to_string(s.send_peer);
    events.push_back(complete(pid, tid, name, s.start, s.end,
                              {{"bytes", s.bytes},
                               {"row", s.row},
                               {"iteration", s.iteration},
                               {"op", r.collectives[s.row].op}}));
  }
  for (const auto& [key, name] : step_thread_names) {
    events.push_back(metadata("thread_name", key.first, key.second, name));
  }

  // One process per channel for the transfers, one thread per connection (source GPU ->
  // destination GPU) and lane, numbered in sorted order.
  struct Placed {
    const CollectiveTransferRecord* t;
    uint32_t src_gpu, dst_gpu;
    int lane;
  };
  std::vector<const CollectiveTransferRecord*> order;
  for (const CollectiveTransferRecord& t : r.collective_transfers) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const CollectiveTransferRecord* a, const CollectiveTransferRecord* b) {
                     return std::tie(a->posted, a->arrived) < std::tie(b->posted, b->arrived);
                   });
  LanePacker packer;
  std::vector<Placed> placed;
  std::map<uint16_t, std::set<std::tuple<uint32_t, uint32_t, int>>> threads_of_channel;
  for (const CollectiveTransferRecord* t : order) {
    const int64_t src = gpu_of(r, t->row, t->src_rank), dst = gpu_of(r, t->row, t->dst_rank);
    if (src < 0 || dst < 0) continue;
    const auto s = static_cast<uint32_t>(src), d = static_cast<uint32_t>(dst);
    const int lane = packer.lane({s, d, t->channel}, t->posted, t->arrived);
    placed.push_back({t, s, d, lane});
    threads_of_channel[t->channel].insert({s, d, lane});
  }
  std::map<std::tuple<uint16_t, uint32_t, uint32_t, int>, int> tid_of;
  for (const auto& [channel, threads] : threads_of_channel) {
    const int pid = trace_transfer_pid(channel);
    events.push_back(
        metadata("process_name", pid, 0, "channel " + std::to_string(channel) + " transfers"));
    int tid = 0;
    for (const auto& [src, dst, lane] : threads) {
      tid_of[{channel, src, dst, lane}] = ++tid;
      std::string name = gpu_name(r, src) + " → " + gpu_name(r, dst);
      if (lane > 0) name += " #" + std::to_string(lane + 1);
      events.push_back(metadata("thread_name", pid, tid, name));
    }
  }
  for (const Placed& p : placed) {
    const CollectiveTransferRecord& t = *p.t;
    events.push_back(complete(
        trace_transfer_pid(t.channel), tid_of.at({t.channel, p.src_gpu, p.dst_gpu, p.lane}),
        std::string(transport_text(t.transport)) + " " + binary_size_text(t.bytes), t.posted,
        t.arrived,
        {{"src", t.src_rank},
         {"dst", t.dst_rank},
         {"bytes", t.bytes},
         {"row", t.row},
         {"iteration", t.iteration}}));
  }

  add_network(r, events);

  std::stable_sort(events.begin(), events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::make_tuple(a.pid, a.tid, !a.metadata, a.ts_ps) <
           std::make_tuple(b.pid, b.tid, !b.metadata, b.ts_ps);
  });
  nlohmann::json list = nlohmann::json::array();
  for (TraceEvent& e : events) list.push_back(std::move(e.json));
  return {{"traceEvents", std::move(list)},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"run_id", r.run_id}}}};
}

void write_trace(const RunResult& r, const std::filesystem::path& file) {
  write_text_atomically(file, json_document(trace_json(r), -1));
}

}  // namespace fabtwin
