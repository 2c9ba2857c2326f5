// The settings of a host that shape what the fabric does, read back and never changed: the RDMA
// device's firmware, port and PCIe link (current against the most the slot and device allow),
// its NUMA node, the driver versions, the DCQCN parameters (MLNX_OFED's
// /sys/class/net/IF/ecn/ in both of its layouts, and the upstream driver's debugfs cc_params),
// the QoS trust and DSCP-to-priority map (OFED's /sys/class/net/IF/qos/) (docs/references.md
// §10.5-10.6). Everything is read under a sysfs root so tests read fixture trees.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace fabtwin::hw {

struct HostSetting {
  std::string name;    // "fw_ver", "pcie/current_link_width", "ecn/roce_np/enable/3", ...
  std::string value;   // as read (trailing newline removed)
  std::string source;  // the file it was read from, or what it was derived from
};

// The RDMA device's settings: fw_ver, hca_type, board_id, the port's state, rate and link
// layer, hw_counters/lifespan, the PCI address, PCIe link speed and width (current and max,
// and pcie/link_downgraded), numa_node, local_cpulist, the driver modules' versions and the
// debugfs cc_params when readable. What is absent is named in `notes`. Throws ObserveError when
// the device or port is missing.
std::vector<HostSetting> read_rdma_settings(const std::filesystem::path& sysfs_root,
                                            const std::string& device, int port,
                                            std::vector<std::string>& notes);

// The network interface's settings: mtu, speed, operstate, and every file under ecn/ and qos/
// (names relative to the interface's directory). Throws ObserveError when it is missing.
std::vector<HostSetting> read_netdev_settings(const std::filesystem::path& sysfs_root,
                                              const std::string& netdev,
                                              std::vector<std::string>& notes);

// The PCI address of an RDMA device (PCI_SLOT_NAME of DEV/device/uevent); empty when unknown.
std::string rdma_pci_address(const std::filesystem::path& sysfs_root, const std::string& device);

}  // namespace fabtwin::hw
