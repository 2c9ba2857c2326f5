// The rows a host observation is stored as (hw/counters, hw/counter_deltas, hw/pfc_pauses,
// hw/settings, hw/observe_notes), declared with their fields once for the HDF5 writer, the JSON
// report and docs/hdf5-schema.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/record_field.h"

namespace fabtwin::hw {

// /hw/counters: one reading of one counter.
struct CounterRow {
  uint32_t rank = 0;
  std::string host, device, source, counter, phase;
  int64_t time_ns = 0;
  int64_t realtime_ns = 0;
  uint64_t value = 0;
};

constexpr auto record_fields(std::type_identity<CounterRow>) {
  using R = CounterRow;
  return std::tuple{
      field("rank", &R::rank, "", "Rank of the process that read it."),
      text("host", &R::host, 64, "Its host name."),
      text("device", &R::device, 32,
           "`mlx5_0/1` (RDMA device/port) for sysfs counters, the interface for ethtool ones."),
      text("source", &R::source, 8, "`sysfs` or `ethtool`."),
      text("counter", &R::counter, 64,
           "Name as found: `hw_counters/np_cnp_sent`, `counters/port_xmit_data` (4-byte units), "
           "`rx_prio3_pause`, ..."),
      text("phase", &R::phase, 8, "`before`, `sample` (during the run) or `after`."),
      field("time_ns", &R::time_ns, "ns", "CLOCK_MONOTONIC_RAW when the snapshot began."),
      field("realtime_ns", &R::realtime_ns, "ns", "CLOCK_REALTIME (Unix time) at the same moment."),
      field("value", &R::value, "", "The counter's value."),
  };
}

// /hw/counter_deltas: after - before of each counter read at both.
struct CounterDeltaRow {
  uint32_t rank = 0;
  std::string host, device, source, counter;
  uint64_t before = 0, after = 0, delta = 0;
  int64_t interval_ns = 0;
  std::string kind;
};

constexpr auto record_fields(std::type_identity<CounterDeltaRow>) {
  using R = CounterDeltaRow;
  return std::tuple{
      field("rank", &R::rank, "", "Rank of the process that read it."),
      text("host", &R::host, 64, "Its host name."),
      text("device", &R::device, 32, "As in `/hw/counters`."),
      text("source", &R::source, 8, "`sysfs` or `ethtool`."),
      text("counter", &R::counter, 64, "As in `/hw/counters`."),
      field("before", &R::before, "", "Value before the run."),
      field("after", &R::after, "", "Value after the run."),
      field("delta", &R::delta, "",
            "The increase: after − before, plus 2^32 when a 32-bit queue counter wrapped; "
            "`after` when the counter was cleared in between."),
      field("interval_ns", &R::interval_ns, "ns", "Between the two readings (monotonic raw)."),
      text("kind", &R::kind, 8, "Empty; `wrapped` (32-bit wrap) or `reset` (cleared)."),
  };
}

// /hw/pfc_pauses: the per-priority PFC statistics' increase over the run.
struct PfcPauseRow {
  uint32_t rank = 0;
  std::string host, netdev, direction;
  uint32_t priority = 0;
  uint64_t pauses = 0, pause_duration_us = 0, transitions = 0;
};

constexpr auto record_fields(std::type_identity<PfcPauseRow>) {
  using R = PfcPauseRow;
  return std::tuple{
      field("rank", &R::rank, "", "Rank of the process that read it."),
      text("host", &R::host, 64, "Its host name."),
      text("netdev", &R::netdev, 32, "Network interface."),
      text("direction", &R::direction, 4,
           "`rx`: pause frames received (this port was paused); `tx`: sent (it paused its peer)."),
      field("priority", &R::priority, "", "PFC priority 0..7."),
      field("pauses", &R::pauses, "", "Pause frames (`*_prio{p}_pause` delta)."),
      field("pause_duration_us", &R::pause_duration_us, "µs",
            "Time paused (`*_prio{p}_pause_duration` delta)."),
      field("transitions", &R::transitions, "",
            "XOFF to XON transitions (`rx_prio{p}_pause_transition` delta; 0 for tx)."),
  };
}

// /hw/settings: one setting read back.
struct SettingRow {
  uint32_t rank = 0;
  std::string host, name, value, source;
};

constexpr auto record_fields(std::type_identity<SettingRow>) {
  using R = SettingRow;
  return std::tuple{
      field("rank", &R::rank, "", "Rank of the process that read it."),
      text("host", &R::host, 64, "Its host name."),
      text("name", &R::name, 64,
           "`fw_ver`, `pcie/current_link_width`, `numa_node`, `ecn/roce_np/enable/3`, "
           "`qos/trust`, `debugfs/cc_params/rp_ai_rate`, `gpu_nic/GPU0/mlx5_0`, ..."),
      text("value", &R::value, 512, "As read (multi-line files keep their newlines)."),
      text("source", &R::source, 160, "The file it was read from, or what it was derived from."),
  };
}

// /hw/observe_notes: what could not be read, and why.
struct ObserveNoteRow {
  uint32_t rank = 0;
  std::string host, note;
};

constexpr auto record_fields(std::type_identity<ObserveNoteRow>) {
  using R = ObserveNoteRow;
  return std::tuple{
      field("rank", &R::rank, "", "Rank of the process that noted it."),
      text("host", &R::host, 64, "Its host name."),
      text("note", &R::note, 256, "What was not read and why."),
  };
}

struct ObservationTables {
  std::vector<CounterRow> counters;
  std::vector<CounterDeltaRow> deltas;
  std::vector<PfcPauseRow> pfc_pauses;
  std::vector<SettingRow> settings;
  std::vector<ObserveNoteRow> notes;
};

}  // namespace fabtwin::hw
