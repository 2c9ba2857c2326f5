// A network interface's driver statistics as `ethtool -S` shows them, read through the kernel's
// ethtool interface (SIOCETHTOOL: ETHTOOL_GSSET_INFO for the count, ETHTOOL_GSTRINGS for the
// names, ETHTOOL_GSTATS for the values), which only reads. On mlx5 they hold the per-priority
// PFC statistics: rx_prio{p}_pause and tx_prio{p}_pause (pause frames),
// rx_prio{p}_pause_duration and tx_prio{p}_pause_duration (µs paused), rx_prio{p}_pause_transition
// (XOFF to XON), present only for the priorities with PFC enabled, and the port's discard,
// buffer and pause-storm counters (docs/references.md §10.4).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/observe/counter_value.h"

namespace fabtwin::hw {

// Every statistic of `netdev`, in the driver's order, source "ethtool". Throws ObserveError
// naming the interface and the request: "no network interface 'x'", or "ethtool statistics of
// lo: not offered by its driver (SIOCETHTOOL ETHTOOL_GSSET_INFO: Operation not supported)".
std::vector<CounterValue> read_ethtool_statistics(const std::string& netdev);

// The same from the text `ethtool -S IF` prints ("NIC statistics:" then "name: value" lines);
// throws ObserveError naming the line that is neither.
std::vector<CounterValue> parse_ethtool_statistics(std::string_view text,
                                                   const std::string& netdev);

// A per-priority PFC statistic's name taken apart: "rx_prio3_pause_duration" is priority 3,
// direction "rx", kind "pause_duration".
struct PfcStatistic {
  int priority = 0;
  std::string direction;  // rx, tx
  std::string kind;       // pause, pause_duration, pause_transition
};
std::optional<PfcStatistic> pfc_statistic(std::string_view name);

}  // namespace fabtwin::hw
