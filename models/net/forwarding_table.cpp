#include "models/net/forwarding_table.h"

#include <algorithm>

namespace fabtwin {

HostEntryMap HostEntryMap::of(std::span<const std::pair<uint32_t, uint32_t>> runs, int hosts,
                              bool by_runs) {
  HostEntryMap m;
  // A run costs two words, a host one: runs pay off below half as many runs as hosts.
  if (by_runs && 2 * runs.size() < static_cast<size_t>(hosts)) {
    m.run_first.reserve(runs.size());
    m.run_entry.reserve(runs.size());
    for (const auto& [first, entry] : runs) {
      m.run_first.push_back(first);
      m.run_entry.push_back(entry);
    }
  } else {
    m.direct.resize(static_cast<size_t>(hosts));
    for (size_t i = 0; i < runs.size(); ++i) {
      const uint32_t end = i + 1 < runs.size() ? runs[i + 1].first : static_cast<uint32_t>(hosts);
      std::fill(m.direct.begin() + runs[i].first, m.direct.begin() + end, runs[i].second);
    }
  }
  return m;
}

uint32_t HostEntryMap::entry_until(int host, int hosts, int& end) const {
  if (!direct.empty()) {
    end = host + 1;
    return direct[static_cast<size_t>(host)];
  }
  const size_t run = run_of(run_first.data(), run_first.size(), host);
  end = run + 1 == run_first.size() ? hosts : static_cast<int>(run_first[run + 1]);
  return run_entry[run];
}

size_t HostEntryMap::memory_bytes() const {
  return sizeof(uint32_t) * (direct.size() + run_first.size() + run_entry.size());
}

ForwardingTable ForwardingTable::from_hops(const std::vector<std::vector<uint16_t>>& per_host,
                                           const std::vector<int>& distance) {
  ForwardingTableBuilder b(static_cast<int>(per_host.size()));
  std::vector<uint32_t> entries(per_host.size());
  for (size_t h = 0; h < per_host.size(); ++h) {
    entries[h] = b.entry(per_host[h], distance.empty() ? kUnreachable : distance[h]);
  }
  return b.finish(ForwardingTableBuilder::runs_of(entries), {}, false);
}

bool ForwardingTable::has_missing_route() const {
  auto missing = [&](const HostEntryMap& m) {
    auto empty = [&](uint32_t e) { return entries_[e].count == 0; };
    return std::any_of(m.direct.begin(), m.direct.end(), empty) ||
           std::any_of(m.run_entry.begin(), m.run_entry.end(), empty);
  };
  return missing(map_) || std::any_of(priority_maps_.begin(), priority_maps_.end(), missing);
}

size_t ForwardingTable::memory_bytes() const {
  size_t bytes = sizeof(uint16_t) * ports_.size() + sizeof(uint32_t) * lookup_.size() +
                 sizeof(Span) * entries_.size() + sizeof(int) * distance_.size() +
                 map_.memory_bytes() + rewrites.size();
  for (const HostEntryMap& m : priority_maps_) bytes += m.memory_bytes() + sizeof(HostEntryMap);
  return bytes;
}

bool ForwardingTable::operator==(const ForwardingTable& o) const {
  if (hosts_ != o.hosts_ || rewrites != o.rewrites ||
      priority_maps_.empty() != o.priority_maps_.empty()) {
    return false;
  }
  // Run by run where both map by runs: hosts [h, end) share their entry in both.
  auto same = [&](const HostEntryMap& a, const HostEntryMap& b) {
    for (int h = 0, end_a = 0, end_b = 0; h < hosts_; h = std::min(end_a, end_b)) {
      const auto x = span(a.entry_until(h, hosts_, end_a));
      const auto y = o.span(b.entry_until(h, hosts_, end_b));
      if (!std::equal(x.begin(), x.end(), y.begin(), y.end())) return false;
    }
    return true;
  };
  if (!same(map_, o.map_)) return false;
  for (size_t q = 0; q < priority_maps_.size(); ++q) {
    if (!same(priority_maps_[q], o.priority_maps_[q])) return false;
  }
  return true;
}

namespace {
uint64_t hash_of(std::span<const uint16_t> ports, int distance) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ static_cast<uint32_t>(distance);
  for (const uint16_t p : ports) h = (h ^ p) * 0x100000001B3ull;
  return h ^ (h >> 29);
}
constexpr uint32_t kNone = UINT32_MAX;
}  // namespace

uint32_t ForwardingTableBuilder::bucket_of(std::span<const uint16_t> ports, int distance) const {
  return static_cast<uint32_t>(hash_of(ports, distance) & (buckets_.size() - 1));
}

void ForwardingTableBuilder::grow() {
  buckets_.assign(std::max<size_t>(16, buckets_.size() * 2), kNone);
  next_.assign(table_.entries_.size(), kNone);
  for (uint32_t e = 0; e < table_.entries_.size(); ++e) {
    const uint32_t b = bucket_of(table_.span(e), table_.distance_[e]);
    next_[e] = buckets_[b];
    buckets_[b] = e;
  }
}

uint32_t ForwardingTableBuilder::entry(std::span<const uint16_t> ports, int distance) {
  if (buckets_.empty()) grow();
  uint32_t b = bucket_of(ports, distance);
  for (uint32_t e = buckets_[b]; e != kNone; e = next_[e]) {
    const auto x = table_.span(e);
    if (table_.distance_[e] == distance &&
        std::equal(x.begin(), x.end(), ports.begin(), ports.end()))
      return e;
  }
  const auto e = static_cast<uint32_t>(table_.entries_.size());
  table_.ports_.push_back(static_cast<uint16_t>(ports.size()));
  table_.entries_.push_back(
      {static_cast<uint32_t>(table_.ports_.size()), static_cast<uint32_t>(ports.size())});
  table_.ports_.insert(table_.ports_.end(), ports.begin(), ports.end());
  table_.distance_.push_back(distance);
  if (table_.entries_.size() > buckets_.size() / 2) {
    grow();
  } else {
    next_.push_back(buckets_[b]);
    buckets_[b] = e;
  }
  return e;
}

ForwardingTableBuilder::Runs ForwardingTableBuilder::runs_of(std::span<const uint32_t> per_host) {
  Runs runs;
  for (size_t h = 0; h < per_host.size(); ++h) {
    if (h == 0 || per_host[h] != per_host[h - 1]) {
      runs.emplace_back(static_cast<uint32_t>(h), per_host[h]);
    }
  }
  return runs;
}

ForwardingTable ForwardingTableBuilder::finish(const Runs& runs,
                                               const std::vector<Runs>& per_priority, bool by_runs,
                                               std::vector<uint8_t> rewrites) {
  ForwardingTable t = std::move(table_);
  t.map_ = HostEntryMap::of(runs, t.hosts_, by_runs);
  const HostEntryMap& m = t.map_;
  t.lookup_runs_ = m.run_first.size();
  t.lookup_ = m.direct.empty() ? m.run_first : std::vector<uint32_t>{};
  for (const uint32_t e : m.direct.empty() ? m.run_entry : m.direct) {
    t.lookup_.push_back(t.entries_[e].begin);
  }
  for (const Runs& r : per_priority)
    t.priority_maps_.push_back(HostEntryMap::of(r, t.hosts_, by_runs));
  t.rewrites = std::move(rewrites);
  buckets_.clear();
  next_.clear();
  table_ = ForwardingTable{};
  return t;
}

}  // namespace fabtwin
