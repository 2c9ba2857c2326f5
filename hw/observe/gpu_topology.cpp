#include "hw/observe/gpu_topology.h"

#include <sstream>

#include "hw/observe/observe_error.h"

namespace fabtwin::hw {

namespace {

std::string without_escapes(std::string_view line) {
  std::string out;
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !std::isalpha(static_cast<unsigned char>(line[i]))) ++i;
      continue;
    }
    out += line[i];
  }
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  return w;
}

bool is_gpu(const std::string& name) {
  return name.size() > 3 && name.starts_with("GPU") &&
         std::isdigit(static_cast<unsigned char>(name[3]));
}

}  // namespace

GpuTopology parse_gpu_topology(std::string_view text) {
  GpuTopology t;
  bool header = false, legend = false;
  int number = 0;
  std::istringstream in{std::string(text)};
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string line = without_escapes(raw);
    const std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (!header) {
      if (is_gpu(w[0])) {
        for (const std::string& c : w) {
          if (c == "CPU") break;
          t.devices.push_back(c);
        }
        header = true;
      }
      continue;
    }
    if (w[0] == "Legend:") {
      legend = true;
      continue;
    }
    if (w[0] == "NIC" && w.size() > 1 && w[1] == "Legend:") continue;
    if (legend) {
      if (w.size() == 2 && w[0].starts_with("NIC") && w[0].ends_with(":")) {
        t.nic_names[w[0].substr(0, w[0].size() - 1)] = w[1];
      }
      continue;
    }
    if (w.size() < t.devices.size() + 1) {
      throw ObserveError("nvidia-smi topo -m, line " + std::to_string(number) + ": expected " +
                         w[0] + " and " + std::to_string(t.devices.size()) +
                         " link kinds, found '" + line + "'");
    }
    for (size_t c = 0; c < t.devices.size(); ++c) t.links[{w[0], t.devices[c]}] = w[c + 1];
    if (is_gpu(w[0])) {
      if (w.size() > t.devices.size() + 1) t.cpu_affinity[w[0]] = w[t.devices.size() + 1];
      if (w.size() > t.devices.size() + 2) t.numa_affinity[w[0]] = w[t.devices.size() + 2];
    }
  }
  if (!header) {
    throw ObserveError("nvidia-smi topo -m: no matrix header (a line starting with GPU0) in " +
                       std::to_string(number) + " lines");
  }
  return t;
}

std::string topology_device_name(const GpuTopology& t, const std::string& column) {
  const auto it = t.nic_names.find(column);
  return it != t.nic_names.end() ? it->second : column;
}

std::vector<HostSetting> gpu_topology_settings(const GpuTopology& t, const std::string& source) {
  std::vector<HostSetting> out;
  for (const std::string& gpu : t.devices) {
    if (!is_gpu(gpu)) continue;
    for (const std::string& other : t.devices) {
      if (is_gpu(other)) continue;
      const auto link = t.links.find({gpu, other});
      if (link == t.links.end()) continue;
      out.push_back(
          {"gpu_nic/" + gpu + "/" + topology_device_name(t, other), link->second, source});
    }
    if (const auto a = t.cpu_affinity.find(gpu); a != t.cpu_affinity.end()) {
      out.push_back({"gpu_cpu_affinity/" + gpu, a->second, source});
    }
    if (const auto a = t.numa_affinity.find(gpu); a != t.numa_affinity.end()) {
      out.push_back({"gpu_numa_affinity/" + gpu, a->second, source});
    }
  }
  return out;
}

}  // namespace fabtwin::hw
