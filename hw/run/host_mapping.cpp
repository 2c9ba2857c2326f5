#include "hw/run/host_mapping.h"

#include <cstdlib>
#include <sstream>
#include <stdexcept>

#include "sim/file_contents.h"

namespace fabtwin::hw {
namespace {

std::optional<int> whole_number(const std::string& text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoi(text);
}

std::optional<int> env_number(const char* name) {
  const char* v = std::getenv(name);
  return v ? whole_number(v) : std::nullopt;
}

}  // namespace

std::vector<int> parse_host_list(const std::string& text, int hosts, const std::string& where) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t dash = item.find('-');
    const auto first = whole_number(item.substr(0, dash));
    const auto last = dash == std::string::npos ? first : whole_number(item.substr(dash + 1));
    if (!first || !last || *last < *first) {
      throw MappingError(where + ": expected scenario hosts like 0-7 or 0,2,4-5, found \"" + text +
                         "\"");
    }
    if (*last >= hosts) {
      throw MappingError(where + ": host " + std::to_string(*last) +
                         " is not in the scenario, which has hosts 0-" + std::to_string(hosts - 1));
    }
    for (int h = *first; h <= *last; ++h) out.push_back(h);
  }
  if (out.empty()) throw MappingError(where + ": expected scenario hosts, found none");
  return out;
}

HostMapping parse_hosts_text(const std::string& text, const std::string& file, int hosts) {
  HostMapping m;
  m.origin = "hosts file " + file;
  m.host_rank.assign(static_cast<size_t>(hosts), -1);
  m.ranks = 0;
  std::stringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::stringstream words(line);
    std::string address, list, extra;
    if (!(words >> address)) continue;
    const std::string where = file + ":" + std::to_string(number);
    if (!(words >> list) || (words >> extra)) {
      throw MappingError(where + ": expected `ADDRESS HOSTS` (e.g. `10.0.0.1 0-7`), found \"" +
                         line + "\"");
    }
    for (int h : parse_host_list(list, hosts, where)) {
      if (m.host_rank[h] >= 0) {
        throw MappingError(where + ": host " + std::to_string(h) + " is already played by rank " +
                           std::to_string(m.host_rank[h]) + " (line of " +
                           m.rank_address[m.host_rank[h]] + ")");
      }
      m.host_rank[h] = m.ranks;
    }
    m.rank_address.push_back(address);
    ++m.ranks;
  }
  if (m.ranks == 0) throw MappingError(file + ": no `ADDRESS HOSTS` line");
  return m;
}

HostMapping read_hosts_file(const std::string& file, int hosts) {
  std::string text;
  try {
    text = file_contents(file, "hosts file");
  } catch (const std::runtime_error& e) {
    throw MappingError(std::string(e.what()) + " (hw.hosts)");
  }
  return parse_hosts_text(text, file, hosts);
}

HostMapping block_mapping(int hosts, int ranks) {
  HostMapping m;
  m.ranks = ranks;
  m.rank_address.assign(static_cast<size_t>(ranks), "");
  for (int h = 0; h < hosts; ++h) {
    m.host_rank.push_back(static_cast<int>(int64_t{h} * ranks / hosts));
  }
  return m;
}

std::optional<LauncherRank> launcher_rank() {
  for (const auto& [rank_var, size_var] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    if (!std::getenv(rank_var) && !std::getenv(size_var)) continue;
    const auto rank = env_number(rank_var), size = env_number(size_var);
    const std::string names = std::string(rank_var) + "/" + size_var;
    if (!rank || !size || *size < 1 || *rank >= *size) {
      throw MappingError(names + ": expected a rank below a size of at least 1, found " +
                         (std::getenv(rank_var) ? std::getenv(rank_var) : "(unset)") + "/" +
                         (std::getenv(size_var) ? std::getenv(size_var) : "(unset)"));
    }
    return LauncherRank{*rank, *size, names};
  }
  return std::nullopt;
}

int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"}) {
    if (const auto v = env_number(name)) return *v;
  }
  return 0;
}

HostMapping resolve_mapping(const std::string& hosts_file, int hosts,
                            const std::vector<bool>& used) {
  HostMapping m;
  if (!hosts_file.empty()) {
    m = read_hosts_file(hosts_file, hosts);
  } else if (const auto launcher = launcher_rank()) {
    m = block_mapping(hosts, launcher->ranks);
    m.origin = "mpirun (" + launcher->variables + ", hosts in blocks)";
  } else {
    m = block_mapping(hosts, 1);
    m.origin = "one process";
  }
  std::string missing;
  int count = 0;
  for (size_t h = 0; h < used.size() && h < m.host_rank.size(); ++h) {
    if (used[h] && m.host_rank[h] < 0) {
      if (++count <= 8) missing += (missing.empty() ? "" : ", ") + std::to_string(h);
    }
  }
  if (count > 0) {
    throw MappingError(m.origin + ": scenario host" + (count > 1 ? "s " : " ") + missing +
                       (count > 8 ? " (and " + std::to_string(count - 8) + " more)" : "") +
                       " send or receive but no process plays " + (count > 1 ? "them" : "it"));
  }
  return m;
}

}  // namespace fabtwin::hw
