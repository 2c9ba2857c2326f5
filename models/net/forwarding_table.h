// One switch's forwarding entries, stored so that memory grows with the fabric rather than with
// switches x hosts. A switch has few distinct entries (an entry: the ordered list of its
// equal-cost egress ports toward a destination, with the destination's distance): in a fat-tree
// an edge switch sends every host outside its rack up the same ports, a core switch sends a
// whole pod down one port. Entries are stored once per switch, and destinations map to them
// either through runs of consecutive host indices (the hosts under one leaf, one pod, ... are
// numbered consecutively by every builder) or, where runs would not be smaller, or the fabric
// is small, through one entry index per host. A lookup allocates nothing.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "models/net/egress_port.h"

namespace fabtwin {

// How many hosts a fabric may have for every switch to map destinations one entry per host
// (a direct index, the fewest instructions) whatever its runs; above it a switch maps them by
// runs unless that takes as much memory as one entry per host. Kept small because the per-host
// tables of a large fabric do not stay in cache: at 1,024 hosts they take 8 KiB per switch, 2.6 MB
// on a k=16 fat-tree, and a packet's lookup missed there, where a switch's dozen runs stay cached.
constexpr int kDirectHostsLimit = 256;

// Destination host -> entry index: per host (`direct`), or by runs of consecutive hosts.
struct HostEntryMap {
  std::vector<uint32_t> direct;     // [host] entry; empty when mapped by runs
  std::vector<uint32_t> run_first;  // first host of each run, ascending, the first 0
  std::vector<uint32_t> run_entry;  // entry of each run

  uint32_t entry(int host) const {
    if (!direct.empty()) return direct[static_cast<size_t>(host)];
    return run_entry[run_of(run_first.data(), run_first.size(), host)];
  }
  // The last of `n` runs (their first hosts ascending from 0) that starts at or before `host`,
  // by branch-free halving.
  static size_t run_of(const uint32_t* first, size_t n, int host) {
    const auto h = static_cast<uint32_t>(host);
    size_t lo = 0;
    while (n > 1) {
      const size_t half = n / 2;
      lo = first[lo + half] <= h ? lo + half : lo;
      n -= half;
    }
    return lo;
  }
  // The entry of `host` and the first host after it that may have another (its run's end;
  // `hosts` for the last run).
  uint32_t entry_until(int host, int hosts, int& end) const;
  // The map of `runs` (first host and entry of each run of hosts with one entry, ascending
  // from host 0, of `hosts` hosts): by runs when `by_runs` allows it and they take less memory
  // than one entry per host.
  static HostEntryMap of(std::span<const std::pair<uint32_t, uint32_t>> runs, int hosts,
                         bool by_runs);
  size_t memory_bytes() const;
};

class ForwardingTable {
 public:
  // An entry's ports, as a range of `ports_`.
  struct Span {
    uint32_t begin = 0;
    uint32_t count = 0;
  };
  static constexpr int kUnreachable = 1 << 29;  // distance of a destination with no route

  ForwardingTable() = default;

  // A table of explicit entries: per_host[h] the ports toward host h, distance[h] its hops
  // (unknown, kUnreachable, where `distance` is empty). For hand-built routes (tests).
  static ForwardingTable from_hops(const std::vector<std::vector<uint16_t>>& per_host,
                                   const std::vector<int>& distance = {});

  // The priority-blind entry (what every priority uses unless a static route names one).
  std::span<const uint16_t> next_hops(int dst_host) const {
    const uint32_t* lookup = lookup_.data();
    const size_t at = lookup_runs_ == 0
                          ? static_cast<size_t>(dst_host)
                          : lookup_runs_ + HostEntryMap::run_of(lookup, lookup_runs_, dst_host);
    const uint16_t* ports = ports_.data() + lookup[at];
    return {ports, ports[-1]};
  }
  // The egress ports toward `dst_host` of a frame of `priority`; empty: no route.
  std::span<const uint16_t> next_hops(int dst_host, int priority) const {
    if (priority_maps_.empty()) return next_hops(dst_host);
    return span(priority_maps_[static_cast<size_t>(priority)].entry(dst_host));
  }
  // The priority a frame that arrived on `in_port` with `priority` leaves with.
  int rewrite(int in_port, int priority) const {
    if (rewrites.empty()) return priority;
    return rewrites[static_cast<size_t>(in_port) * kPriorities + static_cast<size_t>(priority)];
  }
  // Hops (links) from this switch to `dst_host` along the policy's paths (static routes do not
  // change it); kUnreachable when there is no path.
  int distance(int dst_host) const { return distance_[map_.entry(dst_host)]; }

  int hosts() const { return hosts_; }
  // Port slots of the table's entries, and where an entry's ports (a span next_hops() gave)
  // start among them: an id of the equal-cost group, below port_slots().
  size_t port_slots() const { return ports_.size(); }
  uint32_t offset_of(std::span<const uint16_t> hops) const {
    return static_cast<uint32_t>(hops.data() - ports_.data());
  }
  bool has_priority_routes() const { return !priority_maps_.empty(); }
  // Some destination (at some priority) has no route.
  bool has_missing_route() const;
  // Destinations are mapped by runs of hosts (not one entry per host).
  bool by_runs() const { return map_.direct.empty() && hosts_ > 0; }
  size_t entries() const { return entries_.size(); }
  // Heap bytes this table holds (its vectors' sizes, not their capacities).
  size_t memory_bytes() const;

  // Same next hops toward every destination (per priority where either has per-priority
  // entries) and the same rewrites; distances and the way entries are stored do not count.
  bool operator==(const ForwardingTable& other) const;

 private:
  friend class ForwardingTableBuilder;
  std::span<const uint16_t> span(uint32_t entry) const {
    const Span s = entries_[entry];
    return {ports_.data() + s.begin, s.count};
  }

  // What a packet's lookup reads comes first, on one cache line of the switch that holds the
  // table: a fabric of hundreds of switches does not keep them all cached between a switch's
  // packets, and each line more is a miss more.
  //
  // The priority-blind map again, as where each destination's ports start in ports_: one word
  // per host, or (lookup_runs_ > 0) the runs' first hosts followed by their ports' starts. A
  // lookup reads a line or two of it and one of ports_, not the map's runs and entries too.
  std::vector<uint32_t> lookup_;
  size_t lookup_runs_ = 0;
  // Every entry's ports, each list after its count (so a lookup needs nothing else).
  std::vector<uint16_t> ports_;
  int hosts_ = 0;
  std::vector<Span> entries_;
  std::vector<int> distance_;  // [entry]
  HostEntryMap map_;
  // Per-priority maps, only at a switch where a static route names a priority (kPriorities of
  // them, into the same entries). Empty everywhere else: the common case stays one lookup.
  std::vector<HostEntryMap> priority_maps_;

 public:
  // Tagger-style priority rewrite: entry in_port * kPriorities + priority is the priority a
  // frame that arrived on that port with that priority leaves on. Empty: identity everywhere.
  // (Declared last: the lookup leads the object.)
  std::vector<uint8_t> rewrites;
};

// Builds one switch's table: entries are added (and shared when equal), then every host is
// given an entry, per priority where static routes name one.
class ForwardingTableBuilder {
 public:
  explicit ForwardingTableBuilder(int hosts) { table_.hosts_ = hosts; }
  // The entry for `ports` (in order) at `distance`, added unless an equal one exists.
  uint32_t entry(std::span<const uint16_t> ports, int distance);
  std::span<const uint16_t> ports(uint32_t entry) const { return table_.span(entry); }
  int distance(uint32_t entry) const { return table_.distance_[entry]; }

  // Finishes the table: `runs` maps every host to its entry (see HostEntryMap::of); where
  // static routes name a priority, `per_priority` holds kPriorities such maps. `by_runs`: map
  // destinations by runs where that is smaller.
  using Runs = std::vector<std::pair<uint32_t, uint32_t>>;  // (first host, entry)
  ForwardingTable finish(const Runs& runs, const std::vector<Runs>& per_priority, bool by_runs,
                         std::vector<uint8_t> rewrites = {});
  // The runs of a list of per-host entries.
  static Runs runs_of(std::span<const uint32_t> per_host);

 private:
  ForwardingTable table_;
  // Entry indices by hash of (ports, distance); collisions chain through `next_`.
  std::vector<uint32_t> buckets_;
  std::vector<uint32_t> next_;
  void grow();
  uint32_t bucket_of(std::span<const uint16_t> ports, int distance) const;
};

}  // namespace fabtwin
