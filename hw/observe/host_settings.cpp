#include "hw/observe/host_settings.h"

#include <optional>

#include "hw/observe/observe_error.h"
#include "hw/observe/sysfs_counters.h"
#include "hw/observe/sysfs_file.h"

namespace fabtwin::hw {

namespace fs = std::filesystem;

namespace {

// Appends NAME = the text of `file` when it reads; returns whether it did.
bool add(std::vector<HostSetting>& out, const std::string& name, const fs::path& file) {
  const std::optional<std::string> value = read_attribute(file);
  if (!value) return false;
  out.push_back({name, *value, file.string()});
  return true;
}

// Every file under `dir` as PREFIX/RELATIVE; returns how many read.
int add_tree(std::vector<HostSetting>& out, const std::string& prefix, const fs::path& dir,
             std::vector<std::string>& notes) {
  int read = 0;
  for (const std::string& file : attribute_files(dir)) {
    if (add(out, prefix + "/" + file, dir / file)) {
      ++read;
    } else {
      notes.push_back((dir / file).string() + ": not readable; skipped");
    }
  }
  return read;
}

}  // namespace

std::string rdma_pci_address(const fs::path& sysfs_root, const std::string& device) {
  const std::optional<std::string> uevent =
      read_attribute(sysfs_root / "class" / "infiniband" / device / "device" / "uevent");
  if (!uevent) return "";
  const std::string key = "PCI_SLOT_NAME=";
  size_t at = 0;
  while (at < uevent->size()) {
    const size_t end = std::min(uevent->find('\n', at), uevent->size());
    if (uevent->compare(at, key.size(), key) == 0) {
      return uevent->substr(at + key.size(), end - at - key.size());
    }
    at = end + 1;
  }
  return "";
}

std::vector<HostSetting> read_rdma_settings(const fs::path& sysfs_root, const std::string& device,
                                            int port, std::vector<std::string>& notes) {
  const fs::path port_dir = rdma_port_dir(sysfs_root, device, port);
  const fs::path dev = sysfs_root / "class" / "infiniband" / device;
  std::vector<HostSetting> out;
  for (const char* name : {"fw_ver", "hca_type", "board_id", "node_guid"})
    add(out, name, dev / name);
  for (const char* name : {"state", "phys_state", "rate", "link_layer"}) {
    add(out, std::string("port/") + name, port_dir / name);
  }
  add(out, "hw_counters/lifespan", port_dir / "hw_counters" / "lifespan");

  const std::string pci = rdma_pci_address(sysfs_root, device);
  if (!pci.empty()) out.push_back({"pci_address", pci, (dev / "device" / "uevent").string()});
  const fs::path pci_dir = dev / "device";
  bool link = true;
  for (const char* name :
       {"current_link_speed", "current_link_width", "max_link_speed", "max_link_width"}) {
    link = add(out, std::string("pcie/") + name, pci_dir / name) && link;
  }
  if (link) {
    const auto same = [&](const char* a, const char* b) {
      return read_attribute(pci_dir / a) == read_attribute(pci_dir / b);
    };
    const bool full = same("current_link_speed", "max_link_speed") &&
                      same("current_link_width", "max_link_width");
    out.push_back({"pcie/link_downgraded", full ? "no" : "yes",
                   "current_link_speed/width against max_link_speed/width"});
  } else {
    notes.push_back(pci_dir.string() + ": PCIe link speed or width not readable");
  }
  if (!add(out, "numa_node", pci_dir / "numa_node")) {
    notes.push_back((pci_dir / "numa_node").string() + ": not readable");
  }
  add(out, "local_cpulist", pci_dir / "local_cpulist");

  for (const char* module : {"mlx5_core", "mlx5_ib", "ib_core", "nvidia_peermem"}) {
    for (const char* name : {"version", "srcversion"}) {
      add(out, std::string("module/") + module + "/" + name, sysfs_root / "module" / module / name);
    }
  }

  if (!pci.empty()) {
    const fs::path cc = sysfs_root / "kernel" / "debug" / "mlx5" / pci / "cc_params";
    if (add_tree(out, "debugfs/cc_params", cc, notes) == 0) {
      notes.push_back(cc.string() +
                      ": DCQCN parameters not readable (debugfs needs root, and the driver "
                      "offers them only when congestion control may be queried and changed)");
    }
  }
  return out;
}

std::vector<HostSetting> read_netdev_settings(const fs::path& sysfs_root, const std::string& netdev,
                                              std::vector<std::string>& notes) {
  const fs::path dir = sysfs_root / "class" / "net" / netdev;
  std::error_code ec;
  if (netdev.empty() || !fs::is_directory(dir, ec)) {
    throw ObserveError("no network interface '" + netdev + "' under " +
                       (sysfs_root / "class" / "net").string());
  }
  std::vector<HostSetting> out;
  for (const char* name : {"mtu", "speed", "operstate"}) add(out, name, dir / name);
  if (add_tree(out, "ecn", dir / "ecn", notes) == 0) {
    notes.push_back((dir / "ecn").string() +
                    ": no DCQCN enablement or parameters (the ecn/ directory is MLNX_OFED's)");
  }
  if (add_tree(out, "qos", dir / "qos", notes) == 0) {
    notes.push_back((dir / "qos").string() +
                    ": no QoS trust or dscp2prio (the qos/ directory is MLNX_OFED's; PFC "
                    "enablement is then known from the ethtool per-priority pause counters)");
  }
  return out;
}

}  // namespace fabtwin::hw
