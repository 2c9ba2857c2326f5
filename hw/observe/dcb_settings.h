// A network interface's IEEE 802.1Qaz configuration as the kernel's DCB netlink interface
// reports it (RTM_GETDCB with DCB_CMD_IEEE_GET, a query that changes nothing): which priorities
// have PFC enabled, the priority-to-traffic-class map with each class's bandwidth share and
// scheduler, the application table's DSCP-to-priority entries (trust is DSCP when it has any,
// as mlnx_qos decides), and the DCBX mode (docs/references.md §10.5). Drivers without DCB
// support refuse the query; that refusal is a note, not an error.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hw/observe/host_settings.h"

namespace fabtwin::hw {

// Asks the kernel; throws ObserveError naming the interface and the kernel's answer.
std::vector<HostSetting> read_dcb_settings(const std::string& netdev);

// The settings one RTM_GETDCB reply message holds (netlink header included): dcb/dcbx,
// dcb/pfc_enabled, dcb/pfc_cap, dcb/ets/prio_tc, dcb/ets/tc_tx_bw, dcb/ets/tc_tsa, dcb/trust,
// dcb/dscp2prio. Throws ObserveError for an error reply or a malformed message.
std::vector<HostSetting> dcb_settings_from_reply(const unsigned char* data, size_t size,
                                                 const std::string& netdev);

}  // namespace fabtwin::hw
