#include "hw/observe/sysfs_counters.h"

#include <optional>

#include "hw/observe/observe_error.h"
#include "hw/observe/sysfs_file.h"

namespace fabtwin::hw {

namespace fs = std::filesystem;

std::vector<std::string> rdma_devices(const fs::path& sysfs_root) {
  return entry_names(sysfs_root / "class" / "infiniband");
}

fs::path rdma_port_dir(const fs::path& sysfs_root, const std::string& device, int port) {
  const fs::path dev = sysfs_root / "class" / "infiniband" / device;
  std::error_code ec;
  if (device.empty() || !fs::is_directory(dev, ec)) {
    const std::vector<std::string> present = rdma_devices(sysfs_root);
    std::string list;
    for (const std::string& d : present) {
      if (!list.empty()) list += ", ";
      list += d;
    }
    throw ObserveError("no RDMA device '" + device + "' under " +
                       (sysfs_root / "class" / "infiniband").string() +
                       (present.empty() ? std::string(" (no RDMA device there at all)")
                                        : " (devices there: " + list + ")"));
  }
  const fs::path dir = dev / "ports" / std::to_string(port);
  if (!fs::is_directory(dir, ec)) {
    std::string list;
    for (const std::string& p : entry_names(dev / "ports")) {
      if (!list.empty()) list += ", ";
      list += p;
    }
    throw ObserveError("RDMA device '" + device + "' has no port " + std::to_string(port) + " (" +
                       dir.string() +
                       " missing; ports: " + (list.empty() ? std::string("none") : list) + ")");
  }
  return dir;
}

std::vector<CounterValue> read_port_counters(const fs::path& sysfs_root, const std::string& device,
                                             int port, std::vector<std::string>& notes) {
  const fs::path dir = rdma_port_dir(sysfs_root, device, port);
  const std::string where = device + "/" + std::to_string(port);
  std::vector<CounterValue> values;
  for (const char* family : {"hw_counters", "counters"}) {
    for (const std::string& name : entry_names(dir / family)) {
      if (std::string(family) == "hw_counters" && name == "lifespan") continue;
      const fs::path file = dir / family / name;
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) continue;
      const std::optional<uint64_t> v = read_unsigned(file);
      if (!v) {
        notes.push_back(file.string() + ": not read as a number; skipped");
        continue;
      }
      values.push_back({"sysfs", where, std::string(family) + "/" + name, *v});
    }
  }
  return values;
}

std::string rdma_netdev(const fs::path& sysfs_root, const std::string& device) {
  const std::vector<std::string> nets =
      entry_names(sysfs_root / "class" / "infiniband" / device / "device" / "net");
  return nets.empty() ? std::string() : nets.front();
}

}  // namespace fabtwin::hw
