// The RDMA port counters of sysfs: every file under
// SYSFS/class/infiniband/DEV/ports/PORT/hw_counters/ (the mlx5 driver's queue and congestion
// counters: np_cnp_sent, rp_cnp_handled, np_ecn_marked_roce_packets, out_of_sequence,
// packet_seq_err, local_ack_timeout_err, ...) and counters/ (port_xmit_data, port_rcv_data in
// units of 4 bytes, port_xmit_wait, ...), names as the kernel gives them (docs/references.md
// §10.3). The sysfs root is a parameter so tests read fixture trees.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/observe/counter_value.h"

namespace fabtwin::hw {

// The RDMA devices under SYSFS/class/infiniband, sorted.
std::vector<std::string> rdma_devices(const std::filesystem::path& sysfs_root);

// SYSFS/class/infiniband/DEV/ports/PORT; throws ObserveError naming the device (and the devices
// that are there) or the port when missing.
std::filesystem::path rdma_port_dir(const std::filesystem::path& sysfs_root,
                                    const std::string& device, int port);

// Every counter of the port, hw_counters/ first, each family in name order, named
// "hw_counters/NAME" and "counters/NAME". hw_counters/lifespan (the driver's cache period, a
// setting) is not a counter and is left out. A file that does not read as a number is named in
// `notes` and skipped. Throws ObserveError when the device or port is missing.
std::vector<CounterValue> read_port_counters(const std::filesystem::path& sysfs_root,
                                             const std::string& device, int port,
                                             std::vector<std::string>& notes);

// The network interface of an RDMA device's port: the first of DEV/device/net/; empty when it
// has none (InfiniBand, or a device without a netdev).
std::string rdma_netdev(const std::filesystem::path& sysfs_root, const std::string& device);

}  // namespace fabtwin::hw
