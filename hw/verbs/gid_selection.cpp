#include "hw/verbs/gid_selection.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fabtwin::hw {

int gid_score(const GidEntry& entry, AddressFamily family) {
  int score = 0;
  const bool ipv4 = entry.gid.is_ipv4_mapped();
  if ((family == AddressFamily::IPv4) == ipv4) score += 100;
  if (!entry.gid.is_link_local()) score += 10;
  if (entry.type == GidType::RoCEv2) score += 2;
  if (entry.type == GidType::RoCEv1) score += 1;
  return score;
}

GidEntry select_gid(const std::vector<GidEntry>& table, AddressFamily family,
                    const std::string& where) {
  const GidEntry* best = nullptr;
  for (const GidEntry& e : table) {
    if (e.gid.is_zero()) continue;
    if (!best || gid_score(e, family) > gid_score(*best, family) ||
        (gid_score(e, family) == gid_score(*best, family) && e.index < best->index))
      best = &e;
  }
  if (!best)
    throw std::runtime_error(where +
                             ": the GID table has no valid entry (is an IP address "
                             "configured on the port's network interface?)");
  return *best;
}

GidType parse_gid_type(const std::string& text) {
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  if (t == "RoCE v2") return GidType::RoCEv2;
  if (t == "IB/RoCE v1" || t == "RoCE v1") return GidType::RoCEv1;
  if (t == "IB") return GidType::InfiniBand;
  throw std::invalid_argument("unknown GID type '" + t +
                              "' (expected 'RoCE v2', 'IB/RoCE v1' or 'IB')");
}

namespace {

bool read_line(const std::filesystem::path& file, std::string& line) {
  std::ifstream in(file);
  if (!in) return false;
  std::getline(in, line);
  return !in.bad() && !(in.fail() && !in.eof());
}

}  // namespace

std::vector<GidEntry> read_sysfs_gid_table(const std::filesystem::path& root,
                                           const std::string& device, int port) {
  const auto port_dir = root / "class" / "infiniband" / device / "ports" / std::to_string(port);
  const auto gids = port_dir / "gids";
  std::error_code ec;
  if (!std::filesystem::is_directory(gids, ec))
    throw std::runtime_error(gids.string() + ": no such folder (device '" + device + "' or port " +
                             std::to_string(port) + " does not exist)");
  std::vector<int> indices;
  for (const auto& entry : std::filesystem::directory_iterator(gids)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    indices.push_back(std::stoi(name));
  }
  std::sort(indices.begin(), indices.end());
  std::vector<GidEntry> table;
  for (int i : indices) {
    std::string gid_text, type_text;
    if (!read_line(gids / std::to_string(i), gid_text)) continue;
    GidEntry e;
    e.index = i;
    try {
      e.gid = Gid::parse(gid_text);
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error((gids / std::to_string(i)).string() + ": " + error.what());
    }
    if (e.gid.is_zero()) continue;
    if (!read_line(port_dir / "gid_attrs" / "types" / std::to_string(i), type_text)) continue;
    try {
      e.type = parse_gid_type(type_text);
    } catch (const std::invalid_argument& error) {
      throw std::runtime_error((port_dir / "gid_attrs" / "types" / std::to_string(i)).string() +
                               ": " + error.what());
    }
    table.push_back(e);
  }
  return table;
}

}  // namespace fabtwin::hw
