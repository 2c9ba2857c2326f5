#include "models/net/adaptive_routing.h"

#include <algorithm>
#include <bit>

namespace fabtwin {

const char* routing_strategy_name(RoutingStrategy s) {
  switch (s) {
    case RoutingStrategy::Ecmp:
      return "ecmp";
    case RoutingStrategy::Adaptive:
      return "adaptive";
    case RoutingStrategy::Flowlet:
      return "flowlet";
    case RoutingStrategy::Drill:
      return "drill";
    case RoutingStrategy::Spray:
      return "spray";
  }
  return "?";
}

namespace {

constexpr const char* kStrategyChoices = "ecmp|adaptive|flowlet|drill|spray";

RoutingStrategy strategy_named(const std::string& name) {
  for (RoutingStrategy s :
       {RoutingStrategy::Ecmp, RoutingStrategy::Adaptive, RoutingStrategy::Flowlet,
        RoutingStrategy::Drill, RoutingStrategy::Spray}) {
    if (name == routing_strategy_name(s)) return s;
  }
  return RoutingStrategy::Ecmp;
}

const BoundParams<AdaptiveConfig> kAdaptiveParams{
    "routing.adaptive",
    "routing",
    "Adaptive routing: load signal and strategy knobs",
    {
        BoundParams<AdaptiveConfig>::custom(
            {"signal", ParamType::Choice, "\"port_queue_bytes\"",
             "the load adaptive strategies compare ports by: port_queue_bytes (bytes queued at "
             "the egress, all priorities: the link is what is shared), priority_queue_bytes "
             "(bytes queued in the packet's own egress priority), or utilization (fraction of "
             "time the egress was busy over the last utilization_window)",
             "port queue occupancy is the signal of InfiniBand and Spectrum-X adaptive routing "
             "and of DRILL; link utilization that of CONGA (docs/references.md §2.8)",
             "port_queue_bytes|priority_queue_bytes|utilization"},
            [](ParamReader& r, AdaptiveConfig& c) {
              const std::string s = r.choice("signal");
              c.signal = s == "priority_queue_bytes" ? LoadSignal::PriorityQueue
                         : s == "utilization"        ? LoadSignal::Utilization
                                                     : LoadSignal::PortQueue;
            }),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::levels,
            {"levels", ParamType::Integer, "0",
             "quantize the signal to this many levels (0..levels-1) before comparing, as switch "
             "hardware does with a few bits per port; 0 compares exact values",
             "CONGA quantizes link load to 3 bits (8 levels) (docs/references.md §2.8)",
             "0..65536"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::level_range,
            {"level_range", ParamType::Bytes, "\"1MB\"",
             "with levels > 0: the queue depth mapped to the top level (deeper queues stay "
             "there); levels split 0..level_range evenly. The utilization signal always maps "
             "1.0 to the top level",
             "fabtwin: about a 100 Gb/s port's ECN/PFC operating range; set it for the switch"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::update_period,
            {"update_period", ParamType::Time, "\"0us\"",
             "queue signals: 0 reads the queues live at every decision; otherwise the switch "
             "samples every port's signal at the first decision of each period and decides on "
             "that snapshot until the next, modelling the stale state of hardware that polls "
             "queue depths",
             "fabtwin; hardware polls port state every few hundred ns to a few us "
             "(docs/references.md §2.8)"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::utilization_window,
            {"utilization_window", ParamType::Time, "\"10us\"",
             "utilization signal: the fraction of time each egress was busy since the previous "
             "refresh, refreshed at the first decision of each window of this length",
             "CONGA's discounting rate estimator averages over tens of us (docs/references.md "
             "§2.8)"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::flowlet_gap,
            {"flowlet_gap", ParamType::Time, "\"50us\"",
             "flowlet strategy: a flow keeps its port while its packets come less than this "
             "apart; after a longer pause it may move to the least-loaded port. No reordering "
             "when it exceeds the largest difference in path delay (queues included)",
             "CONGA used 500 us for TCP, LetFlow 50-500 us; RoCE round trips are a few us "
             "(docs/references.md §2.8)"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::flowlet_table,
            {"flowlet_table", ParamType::Integer, "4096",
             "flowlet strategy: entries of each switch's flowlet table, indexed by the flow's "
             "5-tuple hash (flows that collide share an entry, as in hardware)",
             "CONGA's leaf has 64K entries; fabtwin's default suits simulated fabrics",
             "1..16777216"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::drill_samples,
            {"drill_samples", ParamType::Integer, "2",
             "DRILL strategy: d, the ports sampled at random per decision (with replacement)",
             "DRILL's recommended (d, m) = (2, 1) (docs/references.md §2.8)", "1..16"}),
        BoundParams<AdaptiveConfig>::field(
            &AdaptiveConfig::drill_memory,
            {"drill_memory", ParamType::Integer, "1",
             "DRILL strategy: m, the least-loaded ports remembered from the last decision and "
             "compared with the samples",
             "DRILL's recommended (d, m) = (2, 1) (docs/references.md §2.8)", "0..8"}),
    },
    [](ParamReader& r, const AdaptiveConfig& c) {
      if (c.utilization_window.ps <= 0) {
        throw ScenarioError(
            r.path_of("utilization_window"),
            "expected a window of at least 1ns, found " + format_time(c.utilization_window));
      }
      if (c.update_period.ps < 0) {
        throw ScenarioError(r.path_of("update_period"), "expected 0 or a positive period, found " +
                                                            format_time(c.update_period));
      }
      if (c.flowlet_gap.ps < 0) {
        throw ScenarioError(r.path_of("flowlet_gap"),
                            "expected a gap of 0 or more, found " + format_time(c.flowlet_gap));
      }
      if (c.levels > 0 && c.level_range <= 0) {
        throw ScenarioError(r.path_of("level_range"),
                            "expected a positive size with levels > 0, found " +
                                format_bytes(Bytes{c.level_range}));
      }
    }};

}  // namespace

const ParamGroup kStrategyRuleParams{
    "routing.strategies[]",
    "routing",
    "A routing strategy for some switches or priorities",
    {{"tier", ParamType::Choice, "(any)",
      "the tier of the switches it applies to (leaf: top-of-rack, edge and rail switches; "
      "spine: leaf-spine spines and fat-tree aggregation; core: fat-tree core)",
      "fabtwin (topology.h)", "leaf|spine|core"},
     {"switch", ParamType::Text, "(any)", "name of the one switch it applies to", "fabtwin"},
     {"priorities", ParamType::List, "(all)",
      "the priorities (0..7, after DSCP classification) it applies to; other priorities keep "
      "theirs. E.g. ECMP for the lossless RoCE class and adaptive for the rest",
      "fabtwin"},
     {"strategy", ParamType::Choice, "", "the strategy: see routing.strategy", "fabtwin",
      kStrategyChoices}}};

const ParamGroup& adaptive_routing_params() {
  return kAdaptiveParams.group();
}

StrategyPolicy StrategyPolicy::read(ParamReader& r, const Topology& t) {
  StrategyPolicy policy;
  policy.strategy = strategy_named(r.choice("strategy"));
  const nlohmann::json& rules = r.raw("strategies");
  if (!rules.is_null() && !rules.is_array()) {
    throw ScenarioError(r.path_of("strategies"), "expected a list, found " + json_text(rules));
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string path = r.path_of("strategies") + "[" + std::to_string(i) + "]";
    ParamReader e(rules[i], path, kStrategyRuleParams);
    StrategyRule rule;
    if (e.has("tier")) {
      const std::string tier = e.choice("tier");
      rule.tier = static_cast<int>(tier == "leaf"    ? Tier::Leaf
                                   : tier == "spine" ? Tier::Spine
                                                     : Tier::Core);
    }
    if (e.has("switch")) {
      const std::string name = e.text("switch");
      const int v = t.node_named(name);
      if (v < 0 || t.nodes[v].kind != NodeKind::Switch) {
        throw ScenarioError(
            e.path_of("switch"),
            "expected the name of a switch of the topology, found \"" + name + "\"");
      }
      rule.node = v;
    }
    if (e.has("priorities")) {
      const nlohmann::json& list = e.raw("priorities");
      if (!list.is_array() || list.empty()) {
        throw ScenarioError(
            e.path_of("priorities"),
            "expected a non-empty list of priorities 0..7, found " + json_text(list));
      }
      rule.priorities = 0;
      for (size_t j = 0; j < list.size(); ++j) {
        if (!list[j].is_number_integer() || list[j].get<int64_t>() < 0 ||
            list[j].get<int64_t>() >= kPriorities) {
          throw ScenarioError(e.path_of("priorities") + "[" + std::to_string(j) + "]",
                              "expected a priority 0..7, found " + json_text(list[j]));
        }
        rule.priorities |= static_cast<uint8_t>(1u << list[j].get<int>());
      }
    }
    if (!e.has("strategy")) throw ScenarioError(e.path_of("strategy"), "required, but missing");
    rule.strategy = strategy_named(e.choice("strategy"));
    e.finish();
    policy.rules.push_back(rule);
  }
  policy.adaptive = kAdaptiveParams.read(r.raw("adaptive"), r.path_of("adaptive"));
  return policy;
}

std::array<RoutingStrategy, kPriorities> StrategyPolicy::for_switch(int node, Tier tier) const {
  std::array<RoutingStrategy, kPriorities> s;
  s.fill(strategy);
  for (const StrategyRule& rule : rules) {
    if (rule.tier >= 0 && rule.tier != static_cast<int>(tier)) continue;
    if (rule.node >= 0 && rule.node != node) continue;
    for (int p = 0; p < kPriorities; ++p) {
      if (rule.priorities >> p & 1) s[p] = rule.strategy;
    }
  }
  return s;
}

bool StrategyPolicy::any_adaptive() const {
  if (strategy != RoutingStrategy::Ecmp) return true;
  for (const StrategyRule& rule : rules) {
    if (rule.strategy != RoutingStrategy::Ecmp) return true;
  }
  return false;
}

AdaptiveRouter::AdaptiveRouter(const AdaptiveConfig& config,
                               const std::array<RoutingStrategy, kPriorities>& strategies,
                               uint32_t salt)
    : config_(config), strategies_(strategies), salt_(salt) {
  sampled_ = config_.signal == LoadSignal::Utilization || config_.update_period.ps > 0;
  period_ = config_.signal == LoadSignal::Utilization ? config_.utilization_window
                                                      : config_.update_period;
  bool flowlet = false, drill = false;
  for (RoutingStrategy s : strategies_) {
    flowlet |= s == RoutingStrategy::Flowlet;
    drill |= s == RoutingStrategy::Drill;
  }
  if (flowlet) flowlets_.resize(static_cast<size_t>(config_.flowlet_table));
  if (drill) memory_.reserve(static_cast<size_t>(config_.drill_memory));
}

void AdaptiveRouter::begin(size_t ports, size_t table_ports) {
  candidates_.resize(std::max<size_t>(ports, static_cast<size_t>(config_.drill_samples) +
                                                 static_cast<size_t>(config_.drill_memory)));
  if (sampled_) {
    snapshot_.assign(ports * kPriorities, 0);
    last_busy_.assign(ports, 0);
  }
  on_table(table_ports);
}

void AdaptiveRouter::on_table(size_t table_ports) {
  spray_.assign(table_ports, 0);
}

// The snapshot every decision until the next refresh sees: queue bytes (per priority where the
// signal is per priority) or, for utilization, the fraction (in 1/65536) of the time since the
// previous refresh that each port spent transmitting.
void AdaptiveRouter::refresh(const std::vector<EgressPort>& ports, Time now) {
  for (size_t i = 0; i < ports.size(); ++i) {
    const EgressPort& port = ports[i];
    int64_t* s = snapshot_.data() + i * kPriorities;
    if (config_.signal == LoadSignal::Utilization) {
      // Busy time up to now: the frame on the wire counts only for what it has sent.
      const int64_t ahead = port.busy_until > now ? (port.busy_until - now).ps : 0;
      const int64_t busy = port.busy_time.ps - ahead;
      const int64_t span = (now - last_refresh_).ps;
      s[0] = span > 0 ? quantize(static_cast<int64_t>(static_cast<__int128>(busy - last_busy_[i]) *
                                                      (1 << 16) / span))
                      : 0;
      last_busy_[i] = busy;
    } else if (config_.signal == LoadSignal::PriorityQueue) {
      for (int q = 0; q < kPriorities; ++q) s[q] = quantize(port.queues[q].bytes());
    } else {
      s[0] = quantize(port.queued_bytes());
    }
  }
  last_refresh_ = now;
  next_refresh_ = Time{(now.ps / period_.ps + 1) * period_.ps};
}

int64_t AdaptiveRouter::load(const std::vector<EgressPort>& ports, uint32_t port, int queue,
                             Time now) {
  if (sampled_ && now >= next_refresh_) refresh(ports, now);
  return signal(ports[port], port, queue);
}

// The least-loaded eligible port of `hops`, ties broken at random. Eligible: link up and not
// paused for `queue`; when no port is, any port whose link is up (it queues behind the pause);
// when every link is down, the first port (the switch then drops the frame).
uint32_t AdaptiveRouter::least_loaded(std::span<const uint16_t> hops, int queue, Time now,
                                      const std::vector<EgressPort>& ports,
                                      const uint8_t* link_down, Rng& rng) {
  if (sampled_ && now >= next_refresh_) refresh(ports, now);
  uint16_t* const candidates = candidates_.data();
  for (int pass = 0; pass < 2; ++pass) {
    int64_t best = std::numeric_limits<int64_t>::max();
    size_t ties = 0;
    for (const uint16_t port : hops) {
      const EgressPort& e = ports[port];
      if (link_down != nullptr && link_down[port]) continue;
      if (pass == 0 && e.queues[queue].paused_until > now) continue;
      const int64_t v = signal(e, port, queue);
      if (v < best) {
        best = v;
        candidates[0] = port;
        ties = 1;
      } else if (v == best) {
        candidates[ties++] = port;
      }
    }
    if (ties == 1) return candidates[0];
    if (ties > 1) return candidates[rng.below(ties)];
  }
  return hops[0];
}

uint32_t AdaptiveRouter::pick(std::span<const uint16_t> hops, uint32_t group, uint32_t hash,
                              int priority, int queue, Time now,
                              const std::vector<EgressPort>& ports, const uint8_t* link_down,
                              Rng& rng) {
  const auto n = static_cast<uint32_t>(hops.size());
  switch (strategies_[priority]) {
    case RoutingStrategy::Ecmp:
    case RoutingStrategy::Adaptive:
      return least_loaded(hops, queue, now, ports, link_down, rng);
    case RoutingStrategy::Flowlet: {
      const uint64_t h = mix64(hash, salt_);
      FlowletEntry& e = flowlets_[static_cast<size_t>(
          (static_cast<unsigned __int128>(h) * flowlets_.size()) >> 64)];
      const bool fresh = now - e.last <= config_.flowlet_gap;
      const Time last = e.last;
      e.last = now;
      if (fresh && std::find(hops.begin(), hops.end(), e.port) != hops.end() &&
          eligible(ports[e.port], e.port, queue, now, link_down, true)) {
        return e.port;
      }
      const auto port =
          static_cast<uint16_t>(least_loaded(hops, queue, now, ports, link_down, rng));
      if (port != e.port && last.ps != kNever) ++flowlet_moves_;
      e.port = port;
      return port;
    }
    case RoutingStrategy::Drill: {
      // d random samples and the m ports remembered from the last decision; the least loaded
      // wins (the first of equals), and the m least loaded are remembered.
      size_t k = 0;
      for (int i = 0; i < config_.drill_samples; ++i) {
        const uint16_t port = hops[rng.below(n)];
        if (eligible(ports[port], port, queue, now, link_down, true)) candidates_[k++] = port;
      }
      for (const uint16_t port : memory_) {
        if (std::find(hops.begin(), hops.end(), port) != hops.end() &&
            eligible(ports[port], port, queue, now, link_down, true)) {
          candidates_[k++] = port;
        }
      }
      if (k == 0) return least_loaded(hops, queue, now, ports, link_down, rng);
      // Insertion sort by load (stable: samples before remembered ports among equals).
      int64_t loads[24];
      for (size_t i = 0; i < k; ++i) {
        const uint16_t port = candidates_[i];
        const int64_t v = load(ports, port, queue, now);
        size_t j = i;
        for (; j > 0 && loads[j - 1] > v; --j) {
          loads[j] = loads[j - 1];
          candidates_[j] = candidates_[j - 1];
        }
        loads[j] = v;
        candidates_[j] = port;
      }
      memory_.clear();
      for (size_t i = 0; i < k && memory_.size() < static_cast<size_t>(config_.drill_memory); ++i) {
        if (std::find(memory_.begin(), memory_.end(), candidates_[i]) == memory_.end()) {
          memory_.push_back(candidates_[i]);
        }
      }
      return candidates_[0];
    }
    case RoutingStrategy::Spray: {
      // Round robin over the group's ports, skipping the ineligible.
      uint32_t& next = spray_[group];
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t at = (next + i) % n;
        const uint16_t port = hops[at];
        if (eligible(ports[port], port, queue, now, link_down, true)) {
          next = (at + 1) % n;
          return port;
        }
      }
      return least_loaded(hops, queue, now, ports, link_down, rng);
    }
  }
  return hops[0];
}

}  // namespace fabtwin
