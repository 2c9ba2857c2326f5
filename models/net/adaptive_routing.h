// Adaptive routing: how a switch chooses one egress among the equal-cost ports its forwarding
// table gives for a destination. ECMP hashes the flow's 5-tuple (every packet of a flow takes
// one path, whatever the load); the other strategies look at the ports' load: per packet
// (least-loaded eligible port, as InfiniBand and Spectrum-X adaptive routing do), per flowlet
// (a flow moves only after a pause longer than the flowlet gap, CONGA/LetFlow), DRILL's power of
// d choices with m remembered ports, and round-robin spraying. A failed link, or a port paused
// by PFC for the packet's priority, is never chosen while another port is eligible. Every
// random choice comes from the switch's own stream; nothing here allocates per packet.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "models/fabric/topology.h"
#include "models/net/egress_port.h"
#include "sim/params.h"
#include "sim/rng.h"

namespace fabtwin {

enum class RoutingStrategy : uint8_t { Ecmp, Adaptive, Flowlet, Drill, Spray };
const char* routing_strategy_name(RoutingStrategy s);

// The load an adaptive switch compares its candidate ports by.
enum class LoadSignal : uint8_t {
  PortQueue,      // bytes queued at the egress port, every priority together
  PriorityQueue,  // bytes queued at the egress port in the packet's own priority
  Utilization,    // fraction of time the egress was busy over the last window
};

// routing.adaptive: the signal and each strategy's knobs.
struct AdaptiveConfig {
  LoadSignal signal = LoadSignal::PortQueue;
  int levels = 0;                 // 0: exact; else the signal is quantized to this many levels
  int64_t level_range = 1 << 20;  // queue bytes (or utilization 1.0) mapped to the top level
  Time update_period{};           // 0: live queue signal; else sampled every period (stale)
  Time utilization_window{10'000'000};  // utilization signal: its window and refresh period
  Time flowlet_gap{50'000'000};         // idle time that ends a flowlet
  int flowlet_table = 4096;             // flowlet entries per switch, indexed by flow hash
  int drill_samples = 2;                // DRILL's d
  int drill_memory = 1;                 // DRILL's m

  bool operator==(const AdaptiveConfig&) const = default;
};

// routing.strategies[i]: the strategy of the switches of `tier` (any when -1) or of one switch
// (`node`, any when -1), for the priorities in `priorities` (bit p; every priority when 0xFF).
struct StrategyRule {
  int tier = -1;
  int node = -1;
  uint8_t priorities = 0xFF;
  RoutingStrategy strategy = RoutingStrategy::Ecmp;

  bool operator==(const StrategyRule&) const = default;
};

// The `routing` keys of this file: the default strategy, the rules over it, the knobs.
struct StrategyPolicy {
  RoutingStrategy strategy = RoutingStrategy::Ecmp;
  std::vector<StrategyRule> rules;  // in order; later rules win
  AdaptiveConfig adaptive;

  // The strategy of each priority at switch `node` of `tier`.
  std::array<RoutingStrategy, kPriorities> for_switch(int node, Tier tier) const;
  // Whether some switch may route some priority other than by ECMP.
  bool any_adaptive() const;

  // Reads routing.strategy, routing.strategies and routing.adaptive from `r` (the routing
  // section's reader); throws ScenarioError naming the JSON path.
  static StrategyPolicy read(ParamReader& r, const Topology& topology);

  bool operator==(const StrategyPolicy&) const = default;
};

extern const ParamGroup kStrategyRuleParams;
const ParamGroup& adaptive_routing_params();

// One switch's adaptive routing state: its strategy per priority, the sampled load signal, the
// flowlet table, DRILL's memory and the spraying counters.
class AdaptiveRouter {
 public:
  AdaptiveRouter(const AdaptiveConfig& config,
                 const std::array<RoutingStrategy, kPriorities>& strategies, uint32_t salt);

  // Whether packets of `priority` are routed adaptively (not by ECMP).
  bool routes(int priority) const { return strategies_[priority] != RoutingStrategy::Ecmp; }
  RoutingStrategy strategy(int priority) const { return strategies_[priority]; }

  // Sizes the state for a switch of `ports` ports whose forwarding table holds `table_ports`
  // port slots (the spraying counters are per slot: per equal-cost group).
  void begin(size_t ports, size_t table_ports);
  // A new forwarding table is installed: the spraying counters start over.
  void on_table(size_t table_ports);

  // The egress, among `hops` (at least two), for a packet of flow hash `hash` whose egress
  // queue is `queue` and whose strategy priority is `priority`, at `now`. `group` is the
  // offset of `hops` in the switch's table (ForwardingTable::offset_of). `link_down`: per port,
  // 1 while its link is down (null: every link up). May return a down port only when every
  // port of `hops` is down.
  uint32_t pick(std::span<const uint16_t> hops, uint32_t group, uint32_t hash, int priority,
                int queue, Time now, const std::vector<EgressPort>& ports, const uint8_t* link_down,
                Rng& rng);

  // Flowlets that started on another port than their entry's previous one (flows moved).
  int64_t flowlet_moves() const { return flowlet_moves_; }

  // The signal of `port` for `queue` as the switch sees it at `now` (sampled, quantized).
  int64_t load(const std::vector<EgressPort>& ports, uint32_t port, int queue, Time now);

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min() / 2;
  struct FlowletEntry {
    Time last{kNever};  // last packet of the flowlet (kNever: unused)
    uint16_t port = 0;
  };
  bool eligible(const EgressPort& port, uint32_t index, int queue, Time now,
                const uint8_t* link_down, bool strict) const {
    if (link_down != nullptr && link_down[index]) return false;
    return !strict || !port.paused(queue, now);
  }
  // The signal as sampled (the snapshot) or live, quantized.
  int64_t signal(const EgressPort& port, uint32_t index, int queue) const {
    if (sampled_) {
      const size_t q = config_.signal == LoadSignal::PriorityQueue ? static_cast<size_t>(queue) : 0;
      return snapshot_[static_cast<size_t>(index) * kPriorities + q];
    }
    return quantize(live(port, queue));
  }
  int64_t live(const EgressPort& port, int queue) const {
    if (config_.signal == LoadSignal::PriorityQueue) return port.queues[queue].bytes();
    int64_t bytes = 0;  // only the queues that hold frames (usually one or none)
    for (unsigned bits = port.backlog; bits != 0; bits &= bits - 1) {
      bytes += port.queues[std::countr_zero(bits)].bytes();
    }
    return bytes;
  }
  int64_t quantize(int64_t v) const {
    if (config_.levels <= 0) return v;
    const int64_t range =
        config_.signal == LoadSignal::Utilization ? int64_t{1} << 16 : config_.level_range;
    const auto level = static_cast<int64_t>(static_cast<__int128>(v) * config_.levels / range);
    return level < config_.levels - 1 ? level : config_.levels - 1;
  }
  void refresh(const std::vector<EgressPort>& ports, Time now);
  uint32_t least_loaded(std::span<const uint16_t> hops, int queue, Time now,
                        const std::vector<EgressPort>& ports, const uint8_t* link_down, Rng& rng);

  AdaptiveConfig config_;
  std::array<RoutingStrategy, kPriorities> strategies_;
  uint32_t salt_;
  bool sampled_ = false;  // the signal is a snapshot refreshed every period_
  Time period_{};
  Time next_refresh_{};
  Time last_refresh_{};
  std::vector<int64_t> snapshot_;   // [port * kPriorities + queue] (or [port * kPriorities])
  std::vector<int64_t> last_busy_;  // [port]: busy picoseconds at the last refresh
  std::vector<uint16_t> candidates_;
  std::vector<FlowletEntry> flowlets_;
  std::vector<uint16_t> memory_;  // DRILL: the remembered least-loaded ports
  std::vector<uint32_t> spray_;   // [table port slot]: next position of its group's rotation
  int64_t flowlet_moves_ = 0;
};

}  // namespace fabtwin
