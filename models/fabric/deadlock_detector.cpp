#include "models/fabric/deadlock_detector.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace fabtwin {

namespace {

using DeadlockParams = BoundParams<DeadlockConfig>;

const DeadlockParams kDeadlockParams{
    "fabric.deadlock",
    "deadlock",
    "PFC deadlock detector (runtime)",
    {
        DeadlockParams::field(
            &DeadlockConfig::enabled,
            {"enabled", ParamType::Boolean, "true",
             "look for PFC deadlocks while the run goes (only with PFC on and a lossless "
             "priority): a cycle of lossless queues that are paused and have sent nothing for "
             "detection_time stops the run (run.on_deadlock); stuck queues without a cycle are "
             "reported as a pause storm",
             "fabtwin (docs/deadlock-detection.md); the wait-for cycle test of docs/references.md "
             "§2.5"}),
        DeadlockParams::field(
            &DeadlockConfig::detection_time,
            {"detection_time", ParamType::Time, "\"1ms\"",
             "a lossless queue that holds frames, is paused by its peer and has sent nothing for "
             "this long is stuck",
             "fabtwin: far above a normal pause episode (tens of us: a group's headroom and XON "
             "offset draining at its share of a port) and far below the 100 ms-class polls of "
             "switch PFC watchdogs, which a run of a few ms would never reach (docs/references.md "
             "§2.5)"}),
        DeadlockParams::field(
            &DeadlockConfig::check_interval,
            {"check_interval", ParamType::Time, "\"100us\"",
             "how often the detector looks (at every multiple of this simulated time, the same for "
             "any thread or rank count); a queue is found stuck up to this long after "
             "detection_time",
             "fabtwin: a tenth of detection_time"}),
    },
    [](ParamReader& r, const DeadlockConfig& c) {
      for (const char* key : {"detection_time", "check_interval"}) {
        const Time t = key[0] == 'd' ? c.detection_time : c.check_interval;
        if (t.ps <= 0) {
          throw ScenarioError(r.path_of(key), "expected a positive time, found " + format_time(t));
        }
      }
    }};

template <typename T>
void put(std::vector<char>& out, const T& value) {
  const char* bytes = reinterpret_cast<const char*>(&value);
  out.insert(out.end(), bytes, bytes + sizeof value);
}

template <typename T>
T take(const char*& in) {
  T value;
  std::memcpy(&value, in, sizeof value);
  in += sizeof value;
  return value;
}

template <typename T>
void put_list(std::vector<char>& out, const std::vector<T>& list) {
  put(out, static_cast<uint64_t>(list.size()));
  for (const T& v : list) put(out, v);
}

template <typename T>
std::vector<T> take_list(const char*& in) {
  std::vector<T> list(take<uint64_t>(in));
  for (T& v : list) v = take<T>(in);
  return list;
}

}  // namespace

const ParamGroup& deadlock_params() {
  return kDeadlockParams.group();
}

DeadlockConfig read_deadlock_config(const nlohmann::json& scenario) {
  static const nlohmann::json none;
  const nlohmann::json* section = &none;
  if (scenario.is_object() && scenario.contains("fabric") && scenario["fabric"].is_object() &&
      scenario["fabric"].contains("deadlock")) {
    section = &scenario["fabric"]["deadlock"];
  }
  return kDeadlockParams.read(*section);
}

DeadlockDetector::DeadlockDetector(const DeadlockConfig& config, bool stop,
                                   const Topology& topology,
                                   const std::array<bool, kPriorities>& lossless,
                                   std::vector<const HostNic*> nics,
                                   std::vector<const Switch*> switches, Transport* transport)
    : config_(config),
      stop_(stop),
      topology_(topology),
      nics_(std::move(nics)),
      switches_(std::move(switches)),
      transport_(transport) {
  for (int p = 0; p < kPriorities; ++p) {
    if (lossless[p]) lossless_.push_back(p);
  }
  size_t states = 0;
  for (const TopologyNode& node : topology.nodes) {
    first_state_.push_back(states);
    states += static_cast<size_t>(node.ports) * kPriorities;
  }
  states_.resize(states);
  report_.enabled = true;
  report_.detection_time = config.detection_time;
  report_.check_interval = config.check_interval;
}

void DeadlockDetector::find_local(Time at, std::vector<StuckQueue>& out) {
  for (size_t v = 0; v < topology_.nodes.size(); ++v) {
    const HostNic* nic = nics_[v];
    const Switch* sw = switches_[v];
    const NetworkNode* node = nic != nullptr ? static_cast<const NetworkNode*>(nic) : sw;
    if (node == nullptr) continue;
    const std::vector<EgressPort>& ports = node->ports();
    for (uint32_t o = 0; o < ports.size(); ++o) {
      const EgressPort& port = ports[o];
      for (const int p : lossless_) {
        QueueState& s = states_[first_state_[v] + o * kPriorities + p];
        const int64_t tx = port.counters[p].tx_packets;
        const bool paused = port.paused(p, at);
        const bool waiting =
            paused && (!port.queues[p].empty() || (nic != nullptr && nic->sends_waiting(p)));
        if (!waiting) {
          s.progress = at;  // empty or free to send: not stuck now
        } else if (tx != s.tx_packets) {
          s.progress = last_check_;  // it sent since the last checkpoint (then got paused)
        }
        s.tx_packets = tx;
        if (!waiting) continue;
        const Time since = std::max(s.progress, port.queues[p].paused_since);
        if (at - since < config_.detection_time) continue;
        StuckQueue q;
        q.node = static_cast<int32_t>(v);
        q.port = o;
        q.priority = static_cast<uint8_t>(p);
        q.since = since;
        if (sw != nullptr) {
          const PacketFifo& fifo = port.queues[p];
          q.bytes = fifo.bytes();
          q.frames = static_cast<int64_t>(fifo.size());
          for (size_t i = 0; i < fifo.size(); ++i) {
            const QueuedPacket& e = fifo.at(i);
            q.ingress.push_back(ingress_group(e.ingress, e.ingress_priority));
            if (e.packet->type == PacketType::Data) q.flows.push_back(e.packet->flow);
          }
          std::sort(q.flows.begin(), q.flows.end());
          q.flows.erase(std::unique(q.flows.begin(), q.flows.end()), q.flows.end());
          std::sort(q.ingress.begin(), q.ingress.end());
          q.ingress.erase(std::unique(q.ingress.begin(), q.ingress.end()), q.ingress.end());
        }
        out.push_back(std::move(q));
      }
    }
  }
}

// Every rank's stuck queues, the same list on every rank.
std::vector<StuckQueue> DeadlockDetector::gather(std::vector<StuckQueue> local) {
  if (transport_ == nullptr) return local;
  if (transport_->sum(static_cast<uint64_t>(local.size())) == 0) return {};
  std::vector<char> mine;
  for (const StuckQueue& q : local) {
    put(mine, q.node);
    put(mine, q.port);
    put(mine, q.priority);
    put(mine, q.since.ps);
    put(mine, q.bytes);
    put(mine, q.frames);
    put_list(mine, q.ingress);
    put_list(mine, q.flows);
  }
  const std::vector<std::vector<char>> outgoing(static_cast<size_t>(transport_->ranks()), mine);
  const std::vector<char> incoming = transport_->exchange(outgoing);
  std::vector<StuckQueue> all;
  for (const char* in = incoming.data(); in < incoming.data() + incoming.size();) {
    StuckQueue q;
    q.node = take<int32_t>(in);
    q.port = take<uint32_t>(in);
    q.priority = take<uint8_t>(in);
    q.since = Time{take<int64_t>(in)};
    q.bytes = take<int64_t>(in);
    q.frames = take<int64_t>(in);
    q.ingress = take_list<uint16_t>(in);
    q.flows = take_list<uint32_t>(in);
    all.push_back(std::move(q));
  }
  return all;
}

std::optional<std::string> DeadlockDetector::check(Time at) {
  std::vector<StuckQueue> local;
  find_local(at, local);
  last_check_ = at;
  std::vector<StuckQueue> stuck = gather(std::move(local));
  std::sort(stuck.begin(), stuck.end(),
            [](const StuckQueue& a, const StuckQueue& b) { return a.key() < b.key(); });
  const bool deadlock = analyse(at, stuck);
  if (deadlock && stop_) return "deadlock";
  return std::nullopt;
}

// Builds the wait-for graph of the stuck queues, records new cycles and the storms; true if
// there is a cycle.
bool DeadlockDetector::analyse(Time at, const std::vector<StuckQueue>& stuck) {
  const int n = static_cast<int>(stuck.size());
  std::vector<std::vector<int>> next(static_cast<size_t>(n)), previous(static_cast<size_t>(n));
  const auto by_node = [&](int32_t node) {
    const auto lo = std::lower_bound(stuck.begin(), stuck.end(), node,
                                     [](const StuckQueue& q, int32_t v) { return q.node < v; });
    const auto hi = std::upper_bound(stuck.begin(), stuck.end(), node,
                                     [](int32_t v, const StuckQueue& q) { return v < q.node; });
    return std::pair(static_cast<int>(lo - stuck.begin()), static_cast<int>(hi - stuck.begin()));
  };
  for (int i = 0; i < n; ++i) {
    const StuckQueue& a = stuck[i];
    const PortPeer& peer = topology_.peer(a.node, static_cast<int>(a.port));
    if (topology_.nodes[peer.node].kind != NodeKind::Switch) continue;  // a NIC forwards nothing
    const auto [lo, hi] = by_node(peer.node);
    for (int j = lo; j < hi; ++j) {
      const StuckQueue& b = stuck[j];
      // a's frames arrive at the peer on a's priority; b holds some of them if it holds frames
      // of that ingress group (b's own priority differs where the peer rewrites priorities).
      if (std::binary_search(b.ingress.begin(), b.ingress.end(),
                             ingress_group(static_cast<uint32_t>(peer.port), a.priority))) {
        next[i].push_back(j);
        previous[j].push_back(i);
      }
    }
  }

  // Strongly connected components (Tarjan), numbered in the order they complete.
  std::vector<int> index(static_cast<size_t>(n), -1), low(static_cast<size_t>(n)),
      component(static_cast<size_t>(n), -1);
  std::vector<bool> on_stack(static_cast<size_t>(n), false);
  std::vector<int> stack;
  int counter = 0, components = 0;
  std::function<void(int)> connect = [&](int v) {
    index[v] = low[v] = counter++;
    stack.push_back(v);
    on_stack[v] = true;
    for (int w : next[v]) {
      if (index[w] < 0) {
        connect(w);
        low[v] = std::min(low[v], low[w]);
      } else if (on_stack[w]) {
        low[v] = std::min(low[v], index[w]);
      }
    }
    if (low[v] == index[v]) {
      for (;;) {
        const int w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        component[w] = components;
        if (w == v) break;
      }
      ++components;
    }
  };
  for (int v = 0; v < n; ++v) {
    if (index[v] < 0) connect(v);
  }
  std::vector<int> size(static_cast<size_t>(components), 0);
  for (int v = 0; v < n; ++v) ++size[component[v]];

  // Which queues reach `from` against the edges (wait on them, directly or not), among `allowed`.
  const auto waiting_on = [&](const std::vector<int>& from, const std::vector<bool>& allowed) {
    std::vector<bool> seen(static_cast<size_t>(n), false);
    std::vector<int> todo;
    for (int v : from) {
      seen[v] = true;
      todo.push_back(v);
    }
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      for (int u : previous[v]) {
        if (!seen[u] && allowed[u]) {
          seen[u] = true;
          todo.push_back(u);
        }
      }
    }
    return seen;
  };
  const std::vector<bool> everything(static_cast<size_t>(n), true);

  // Deadlocks: one cycle per component with one (the smallest queue first, then always the
  // smallest successor inside the component).
  std::vector<bool> in_knot(static_cast<size_t>(n), false);
  bool any_cycle = false;
  std::vector<bool> done(static_cast<size_t>(components), false);
  for (int start = 0; start < n; ++start) {
    const int c = component[start];
    const bool self_loop =
        std::find(next[start].begin(), next[start].end(), start) != next[start].end();
    if (done[c] || (size[c] < 2 && !self_loop)) continue;
    done[c] = true;
    any_cycle = true;
    std::vector<int> members;
    for (int v = 0; v < n; ++v) {
      if (component[v] == c) members.push_back(v);
    }
    const std::vector<bool> reach = waiting_on(members, everything);
    for (int v = 0; v < n; ++v) in_knot[v] = in_knot[v] || reach[v];
    std::vector<int> path;
    std::vector<int> position(static_cast<size_t>(n), -1);
    int v = start;
    while (position[v] < 0) {
      position[v] = static_cast<int>(path.size());
      path.push_back(v);
      for (int w : next[v]) {
        if (component[w] == c) {
          v = w;
          break;
        }
      }
    }
    const std::vector<int> cycle(path.begin() + position[v], path.end());
    std::vector<std::tuple<int32_t, uint32_t, uint8_t>> signature;
    for (int q : cycle) signature.push_back(stuck[q].key());
    std::sort(signature.begin(), signature.end());
    if (!cycles_seen_.insert(signature).second) continue;  // reported when it was first found

    const auto row = static_cast<uint32_t>(report_.deadlocks.size());
    DeadlockRecord d;
    d.detected_at = at;
    d.queues = static_cast<uint32_t>(cycle.size());
    std::vector<uint32_t> flows;
    for (size_t k = 0; k < cycle.size(); ++k) {
      const StuckQueue& q = stuck[cycle[k]];
      d.formed_at = std::max(d.formed_at, q.since);
      d.bytes_stranded += q.bytes;
      flows.insert(flows.end(), q.flows.begin(), q.flows.end());
      DeadlockQueueRecord r;
      r.deadlock = row;
      r.position = static_cast<uint32_t>(k);
      r.node = topology_.nodes[q.node].name;
      r.port = q.port;
      r.peer = topology_.nodes[topology_.peer(q.node, static_cast<int>(q.port)).node].name;
      r.priority = q.priority;
      r.stuck_since = q.since;
      r.bytes = q.bytes;
      r.frames = q.frames;
      report_.cycles.push_back(std::move(r));
    }
    std::sort(flows.begin(), flows.end());
    flows.erase(std::unique(flows.begin(), flows.end()), flows.end());
    d.flows = static_cast<uint32_t>(flows.size());
    for (uint32_t f : flows) report_.flows.push_back({row, f});
    for (int u = 0; u < n; ++u) {
      if (!reach[u]) continue;
      ++d.stuck_queues;
      d.stuck_bytes += stuck[u].bytes;
    }
    report_.deadlocks.push_back(d);
  }

  // Storms: the stuck queues that wait on no cycle, by root (a stuck queue waiting on nothing
  // stuck). A root stuck since the same time as at the last checkpoint continues its row.
  std::vector<bool> storm(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) storm[v] = !in_knot[v];
  std::map<std::tuple<int32_t, uint32_t, uint8_t>, size_t> open;
  for (int v = 0; v < n; ++v) {
    if (!storm[v] || !next[v].empty()) continue;
    const StuckQueue& q = stuck[v];
    const std::vector<bool> tree = waiting_on({v}, storm);
    const auto queues = static_cast<uint32_t>(std::count(tree.begin(), tree.end(), true));
    const auto it = open_storms_.find(q.key());
    size_t row;
    if (it != open_storms_.end() && report_.storms[it->second].stuck_since == q.since) {
      row = it->second;
    } else {
      row = report_.storms.size();
      StormRecord s;
      s.node = topology_.nodes[q.node].name;
      s.port = q.port;
      s.peer = topology_.nodes[topology_.peer(q.node, static_cast<int>(q.port)).node].name;
      s.switch_port = topology_.nodes[q.node].kind == NodeKind::Switch;
      s.priority = q.priority;
      s.stuck_since = q.since;
      s.first_detected = at;
      report_.storms.push_back(std::move(s));
    }
    StormRecord& s = report_.storms[row];
    s.last_detected = at;
    s.max_queues = std::max(s.max_queues, queues);
    open[q.key()] = row;
  }
  open_storms_ = std::move(open);
  return any_cycle;
}

}  // namespace fabtwin
