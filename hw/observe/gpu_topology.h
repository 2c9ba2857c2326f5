// How the GPUs and NICs of a host are connected, as `nvidia-smi topo -m` prints it: a matrix of
// link kinds between every pair of devices (X self, NV# bonded NVLinks, PIX at most one PCIe
// bridge, PXB several bridges, PHB through a host bridge, NODE between host bridges of one NUMA
// node, SYS across NUMA nodes), each GPU's CPU and NUMA affinity, and the NIC legend that names
// NICn's RDMA device (docs/references.md §10.6).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "hw/observe/host_settings.h"

namespace fabtwin::hw {

struct GpuTopology {
  std::vector<std::string> devices;  // the matrix's columns: GPU0.., NIC0.. (or mlx5_0.. in old
                                     // versions, which print device names and no legend)
  std::map<std::pair<std::string, std::string>, std::string> links;  // (row, column) -> kind
  std::map<std::string, std::string> cpu_affinity, numa_affinity;    // per GPU row
  std::map<std::string, std::string> nic_names;                      // NIC0 -> mlx5_0
};

// Reads the text of `nvidia-smi topo -m` (ANSI underlines removed); throws ObserveError naming
// the line when a matrix row has fewer cells than there are columns, or when there is no
// matrix header (a line of GPU columns).
GpuTopology parse_gpu_topology(std::string_view text);

// The RDMA device name of a matrix column: NICn through the legend, a device name as itself.
std::string topology_device_name(const GpuTopology& t, const std::string& column);

// The host settings it gives: gpu_nic/GPUi/DEV (the link kind between every GPU and every
// RDMA device), gpu_cpu_affinity/GPUi and gpu_numa_affinity/GPUi; `source` names the command.
std::vector<HostSetting> gpu_topology_settings(const GpuTopology& t, const std::string& source);

}  // namespace fabtwin::hw
