#include "hw/observe/host_observer.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "hw/observe/dcb_settings.h"
#include "hw/observe/ethtool_stats.h"
#include "hw/observe/gpu_topology.h"
#include "hw/observe/sysfs_counters.h"

namespace fabtwin::hw {

namespace {

int64_t clock_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// The command's standard output and exit status (127: not found).
std::pair<std::string, int> command_output(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return {"", -1};
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

// The priorities with per-priority pause counters: mlx5 offers them only where PFC is enabled.
std::string pause_counter_priorities(const std::vector<CounterValue>& values) {
  std::set<int> priorities;
  for (const CounterValue& v : values) {
    if (const auto s = pfc_statistic(v.counter); s && s->kind == "pause") {
      priorities.insert(s->priority);
    }
  }
  std::string list;
  for (const int p : priorities) {
    if (!list.empty()) list += ',';
    list += std::to_string(p);
  }
  return list.empty() ? "none" : list;
}

}  // namespace

HostObserver::HostObserver(ObserveConfig config) : config_(std::move(config)) {
  if (config_.sample_period <= std::chrono::milliseconds(0)) {
    throw ObserveError("observe: sample period must be > 0 ms, found " +
                       std::to_string(config_.sample_period.count()) + " ms");
  }
  if (config_.host.empty()) config_.host = host_name();
  if (!config_.device.empty()) {
    rdma_port_dir(config_.sysfs_root, config_.device, config_.port);
    if (config_.netdev.empty()) config_.netdev = rdma_netdev(config_.sysfs_root, config_.device);
  }
  if (!config_.netdev.empty()) {
    std::error_code ec;
    if (!std::filesystem::is_directory(config_.sysfs_root / "class" / "net" / config_.netdev, ec)) {
      throw ObserveError("no network interface '" + config_.netdev + "' under " +
                         (config_.sysfs_root / "class" / "net").string());
    }
  }
  observation_.rank = config_.rank;
  observation_.host = config_.host;
  observation_.device = config_.device;
  observation_.port = config_.device.empty() ? 0 : config_.port;
  observation_.netdev = config_.netdev;
}

HostObserver::~HostObserver() {
  stop_sampling();
}

CounterSnapshot HostObserver::snapshot(const std::string& phase, std::vector<std::string>& notes) {
  CounterSnapshot s;
  s.phase = phase;
  s.monotonic_raw_ns = clock_ns(CLOCK_MONOTONIC_RAW);
  s.realtime_ns = clock_ns(CLOCK_REALTIME);
  if (!config_.device.empty()) {
    s.values = read_port_counters(config_.sysfs_root, config_.device, config_.port, notes);
  }
  if (config_.ethtool && !config_.netdev.empty() && !ethtool_failed_) {
    try {
      std::vector<CounterValue> e = read_ethtool_statistics(config_.netdev);
      s.values.insert(s.values.end(), e.begin(), e.end());
    } catch (const ObserveError& e) {
      ethtool_failed_ = true;  // the same refusal every time: said once
      notes.push_back(e.what());
    }
  }
  return s;
}

void HostObserver::before() {
  std::vector<std::string> notes;
  std::vector<HostSetting> settings;
  if (!config_.device.empty()) {
    settings = read_rdma_settings(config_.sysfs_root, config_.device, config_.port, notes);
  }
  if (!config_.netdev.empty()) {
    const std::vector<HostSetting> n =
        read_netdev_settings(config_.sysfs_root, config_.netdev, notes);
    settings.insert(settings.end(), n.begin(), n.end());
    try {
      const std::vector<HostSetting> dcb = read_dcb_settings(config_.netdev);
      settings.insert(settings.end(), dcb.begin(), dcb.end());
    } catch (const ObserveError& e) {
      notes.push_back(e.what());
    }
  }
  if (!config_.gpu_topology_command.empty()) {
    const auto [text, status] = command_output(config_.gpu_topology_command);
    if (status != 0) {
      notes.push_back("GPU-NIC affinity not read: '" + config_.gpu_topology_command +
                      "' exited with " + std::to_string(status) +
                      (status == 127 ? " (not found)" : ""));
    } else {
      try {
        const std::vector<HostSetting> t =
            gpu_topology_settings(parse_gpu_topology(text), config_.gpu_topology_command);
        settings.insert(settings.end(), t.begin(), t.end());
      } catch (const ObserveError& e) {
        notes.push_back(std::string("GPU-NIC affinity not read: ") + e.what());
      }
    }
  }
  CounterSnapshot first = snapshot("before", notes);
  bool ethtool = false;
  for (const CounterValue& v : first.values) ethtool = ethtool || v.source == "ethtool";
  if (ethtool) {
    settings.push_back({"pfc/priorities_with_pause_counters",
                        pause_counter_priorities(first.values),
                        "ethtool statistics of " + config_.netdev +
                            " (the driver counts pauses only for PFC-enabled priorities)"});
  }
  const std::lock_guard lock(mutex_);
  observation_.settings.insert(observation_.settings.end(), settings.begin(), settings.end());
  observation_.notes.insert(observation_.notes.end(), notes.begin(), notes.end());
  observation_.snapshots.push_back(std::move(first));
}

void HostObserver::sample_loop() {
  // Each snapshot one period after the previous one began: a late wake-up (a loaded host)
  // delays the next one instead of making it up with a burst, so snapshots are never closer
  // than the period.
  auto next = std::chrono::steady_clock::now();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (wake_.wait_until(lock, next, [&] { return !sampling_; })) return;
    }
    next = std::chrono::steady_clock::now() + config_.sample_period;
    std::vector<std::string> notes;
    CounterSnapshot s = snapshot("sample", notes);
    const std::lock_guard lock(mutex_);
    observation_.snapshots.push_back(std::move(s));
    observation_.notes.insert(observation_.notes.end(), notes.begin(), notes.end());
  }
}

void HostObserver::start_sampling() {
  const std::lock_guard lock(mutex_);
  if (sampling_) return;
  sampling_ = true;
  sampler_ = std::thread([this] { sample_loop(); });
}

void HostObserver::stop_sampling() {
  {
    const std::lock_guard lock(mutex_);
    sampling_ = false;
  }
  wake_.notify_all();
  if (sampler_.joinable()) sampler_.join();
}

void HostObserver::after() {
  stop_sampling();
  std::vector<std::string> notes;
  CounterSnapshot last = snapshot("after", notes);
  const std::lock_guard lock(mutex_);
  observation_.snapshots.push_back(std::move(last));
  observation_.notes.insert(observation_.notes.end(), notes.begin(), notes.end());
}

Observation HostObserver::take() {
  stop_sampling();
  const std::lock_guard lock(mutex_);
  Observation o = std::move(observation_);
  observation_ = Observation{o.rank, o.host, o.device, o.netdev, o.port, {}, {}, {}};
  return o;
}

nlohmann::json Observation::to_json() const {
  nlohmann::json j;
  j["rank"] = rank;
  j["host"] = host;
  j["device"] = device;
  j["port"] = port;
  j["netdev"] = netdev;
  j["settings"] = nlohmann::json::array();
  for (const HostSetting& s : settings) {
    j["settings"].push_back({{"name", s.name}, {"value", s.value}, {"source", s.source}});
  }
  j["snapshots"] = nlohmann::json::array();
  for (const CounterSnapshot& s : snapshots) {
    nlohmann::json values = nlohmann::json::array();
    for (const CounterValue& v : s.values)
      values.push_back({v.source, v.device, v.counter, v.value});
    j["snapshots"].push_back({{"phase", s.phase},
                              {"monotonic_raw_ns", s.monotonic_raw_ns},
                              {"realtime_ns", s.realtime_ns},
                              {"values", values}});
  }
  j["notes"] = notes;
  return j;
}

namespace {

// j[key] as T, or ObserveError naming `where.key`, what was expected and what was found.
template <class T>
T member(const nlohmann::json& j, const std::string& where, const char* key, const char* expected) {
  if (!j.is_object()) {
    throw ObserveError(where + ": expected an object, found " + std::string(j.type_name()));
  }
  const auto it = j.find(key);
  if (it == j.end()) throw ObserveError(where + "." + key + ": missing (" + expected + ")");
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ObserveError(where + "." + key + ": expected " + expected + ", found " +
                       std::string(it->type_name()) + " " + it->dump().substr(0, 40));
  }
}

const nlohmann::json& array_member(const nlohmann::json& j, const std::string& where,
                                   const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_array()) {
    throw ObserveError(where + "." + key + ": expected an array, found " +
                       (it == j.end() ? std::string("nothing") : std::string(it->type_name())));
  }
  return *it;
}

}  // namespace

Observation Observation::from_json(const nlohmann::json& j) {
  const std::string w = "observation";
  Observation o;
  o.rank = member<int>(j, w, "rank", "an integer");
  const std::string where = "observation of rank " + std::to_string(o.rank);
  o.host = member<std::string>(j, where, "host", "a string");
  o.device = member<std::string>(j, where, "device", "a string");
  o.port = member<int>(j, where, "port", "an integer");
  o.netdev = member<std::string>(j, where, "netdev", "a string");
  const nlohmann::json& settings = array_member(j, where, "settings");
  for (size_t i = 0; i < settings.size(); ++i) {
    const std::string at = where + ".settings[" + std::to_string(i) + "]";
    o.settings.push_back({member<std::string>(settings[i], at, "name", "a string"),
                          member<std::string>(settings[i], at, "value", "a string"),
                          member<std::string>(settings[i], at, "source", "a string")});
  }
  const nlohmann::json& snapshots = array_member(j, where, "snapshots");
  for (size_t i = 0; i < snapshots.size(); ++i) {
    const std::string at = where + ".snapshots[" + std::to_string(i) + "]";
    CounterSnapshot s;
    s.phase = member<std::string>(snapshots[i], at, "phase", "a string");
    s.monotonic_raw_ns = member<int64_t>(snapshots[i], at, "monotonic_raw_ns", "an integer");
    s.realtime_ns = member<int64_t>(snapshots[i], at, "realtime_ns", "an integer");
    const nlohmann::json& values = array_member(snapshots[i], at, "values");
    for (size_t k = 0; k < values.size(); ++k) {
      const nlohmann::json& v = values[k];
      if (!v.is_array() || v.size() != 4 || !v[0].is_string() || !v[1].is_string() ||
          !v[2].is_string() || !v[3].is_number_unsigned()) {
        throw ObserveError(at + ".values[" + std::to_string(k) +
                           "]: expected [source, device, counter, unsigned value], found " +
                           v.dump().substr(0, 60));
      }
      s.values.push_back({v[0].get<std::string>(), v[1].get<std::string>(), v[2].get<std::string>(),
                          v[3].get<uint64_t>()});
    }
    o.snapshots.push_back(std::move(s));
  }
  const nlohmann::json& notes = array_member(j, where, "notes");
  for (size_t i = 0; i < notes.size(); ++i) {
    if (!notes[i].is_string()) {
      throw ObserveError(where + ".notes[" + std::to_string(i) + "]: expected a string, found " +
                         std::string(notes[i].type_name()));
    }
    o.notes.push_back(notes[i].get<std::string>());
  }
  return o;
}

ObservationTables observation_tables(const std::vector<Observation>& observations) {
  ObservationTables t;
  for (const Observation& o : observations) {
    const auto rank = static_cast<uint32_t>(o.rank);
    const CounterSnapshot* first = nullptr;
    const CounterSnapshot* last = nullptr;
    for (const CounterSnapshot& s : o.snapshots) {
      for (const CounterValue& v : s.values) {
        t.counters.push_back({rank, o.host, v.device, v.source, v.counter, s.phase,
                              s.monotonic_raw_ns, s.realtime_ns, v.value});
      }
      if (s.phase == "before" && first == nullptr) first = &s;
      if (s.phase == "after") last = &s;
    }
    if (first != nullptr && last != nullptr) {
      std::map<std::tuple<std::string, std::string, std::string>, uint64_t> before;
      for (const CounterValue& v : first->values) before[{v.source, v.device, v.counter}] = v.value;
      // (netdev, direction, priority) -> row
      std::map<std::tuple<std::string, std::string, int>, PfcPauseRow> pfc;
      for (const CounterValue& v : last->values) {
        const auto b = before.find({v.source, v.device, v.counter});
        if (b == before.end()) continue;
        const CounterDelta d =
            counter_delta(b->second, v.value, counter_wrap_bits(v.source, v.counter));
        t.deltas.push_back({rank, o.host, v.device, v.source, v.counter, b->second, v.value,
                            d.delta, last->monotonic_raw_ns - first->monotonic_raw_ns,
                            delta_kind_name(d.kind)});
        if (v.source != "ethtool") continue;
        if (const auto s = pfc_statistic(v.counter)) {
          PfcPauseRow& row = pfc[{v.device, s->direction, s->priority}];
          row.rank = rank;
          row.host = o.host;
          row.netdev = v.device;
          row.direction = s->direction;
          row.priority = static_cast<uint32_t>(s->priority);
          if (s->kind == "pause") row.pauses = d.delta;
          if (s->kind == "pause_duration") row.pause_duration_us = d.delta;
          if (s->kind == "pause_transition") row.transitions = d.delta;
        }
      }
      for (const auto& [key, row] : pfc) t.pfc_pauses.push_back(row);
    }
    for (const HostSetting& s : o.settings) {
      t.settings.push_back({rank, o.host, s.name, s.value, s.source});
    }
    for (const std::string& n : o.notes) t.notes.push_back({rank, o.host, n});
  }
  return t;
}

}  // namespace fabtwin::hw
