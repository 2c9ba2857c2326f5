// What one host of a hardware run reads about itself, never writes: its RDMA port's counters
// (sysfs hw_counters/ and counters/) and its network interface's ethtool statistics before the
// run, sampled during it by a thread at a fixed period, and after it, each reading stamped with
// CLOCK_MONOTONIC_RAW and CLOCK_REALTIME; and its settings (firmware, PCIe link, NUMA node,
// DCQCN, QoS, PFC and ETS from DCB netlink, GPU-NIC affinity, driver versions) before it. Rank 0
// gathers every rank's Observation over the control group as JSON and writes the tables of
// for_each_observation_table into the run's HDF5 file (docs/hardware.md, "What is read, never
// written").
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "hw/observe/counter_value.h"
#include "hw/observe/host_settings.h"
#include "hw/observe/observation_rows.h"
#include "hw/observe/observe_error.h"

namespace fabtwin::hw {

struct ObserveConfig {
  std::filesystem::path sysfs_root = "/sys";
  std::string device;  // RDMA device, "mlx5_0"; empty: no RDMA counters or settings
  int port = 1;
  std::string netdev;  // network interface; empty: the device's (DEV/device/net/)
  std::chrono::milliseconds sample_period{100};  // between samples while sampling; > 0
  int rank = 0;
  std::string host;     // empty: gethostname()
  bool ethtool = true;  // read the interface's ethtool statistics (SIOCETHTOOL)
  // Run for the GPU-NIC affinity matrix; empty: not read. Its absence (or a non-zero exit) is a
  // note, not an error.
  std::string gpu_topology_command = "nvidia-smi topo -m";
};

// The counters read at one moment.
struct CounterSnapshot {
  std::string phase;  // before, sample, after
  int64_t monotonic_raw_ns = 0;
  int64_t realtime_ns = 0;
  std::vector<CounterValue> values;
};

struct Observation {
  int rank = 0;
  std::string host, device, netdev;
  int port = 0;
  std::vector<HostSetting> settings;
  std::vector<CounterSnapshot> snapshots;  // in time order
  std::vector<std::string> notes;          // what could not be read, and why

  nlohmann::json to_json() const;
  // Throws ObserveError naming the field that is missing or of the wrong type.
  static Observation from_json(const nlohmann::json& j);
};

class HostObserver {
 public:
  // Checks that the device, its port and the interface exist; throws ObserveError naming what
  // is missing (and the devices there are).
  explicit HostObserver(ObserveConfig config);
  ~HostObserver();
  HostObserver(const HostObserver&) = delete;
  HostObserver& operator=(const HostObserver&) = delete;

  void before();          // settings and the first counter snapshot
  void start_sampling();  // a thread takes a snapshot now, then one a period after each began
  void stop_sampling();   // joins it; a no-op when not sampling
  void after();           // stops sampling, takes the last snapshot
  Observation take();     // what was read; the observer is empty afterwards

 private:
  CounterSnapshot snapshot(const std::string& phase, std::vector<std::string>& notes);
  void sample_loop();

  ObserveConfig config_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool sampling_ = false;
  bool ethtool_failed_ = false;
  std::thread sampler_;
  Observation observation_;
};

// The rows of every table, from every rank's observation (in rank order).
ObservationTables observation_tables(const std::vector<Observation>& observations);

// visit(name, rows) for each table: hw/counters, hw/counter_deltas, hw/pfc_pauses,
// hw/settings, hw/observe_notes.
template <class Visit>
void for_each_observation_table(const std::vector<Observation>& observations, Visit&& visit) {
  const ObservationTables t = observation_tables(observations);
  visit("hw/counters", t.counters);
  visit("hw/counter_deltas", t.deltas);
  visit("hw/pfc_pauses", t.pfc_pauses);
  visit("hw/settings", t.settings);
  visit("hw/observe_notes", t.notes);
}

}  // namespace fabtwin::hw
