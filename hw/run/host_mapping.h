// Which process plays which scenario host. Three ways: a hosts file (one line per process,
// `ADDRESS HOSTS`, rank = line order), the ranks of an mpirun job (OMPI_COMM_WORLD_RANK/SIZE or
// PMI_RANK/SIZE) with the hosts dealt to ranks in blocks, or one process playing every host.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabtwin::hw {

// A hosts file or launcher environment that cannot be used: names the file and line, or the
// variable, and what was expected.
class MappingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HostMapping {
  int ranks = 1;
  std::vector<int> host_rank;             // scenario host -> process; -1: played by none
  std::vector<std::string> rank_address;  // process -> its address ("" when not known)
  std::string origin;                     // "hosts file FILE", "mpirun", "one process"
};

// The scenario hosts a list such as "0-3,8,10-11" names; `where` prefixes errors.
std::vector<int> parse_host_list(const std::string& text, int hosts, const std::string& where);

// Reads a hosts file for a scenario of `hosts` hosts. Throws MappingError naming FILE:LINE for
// a malformed line, a host outside the scenario or a host given twice.
HostMapping read_hosts_file(const std::string& file, int hosts);
HostMapping parse_hosts_text(const std::string& text, const std::string& file, int hosts);

// `ranks` processes, host h played by rank h * ranks / hosts (blocks of consecutive hosts).
HostMapping block_mapping(int hosts, int ranks);

// This process's rank and the job's size as an MPI launcher gives them in the environment
// (Open MPI's OMPI_COMM_WORLD_*, else PMI_*); nullopt when started without one.
struct LauncherRank {
  int rank = 0, ranks = 1;
  std::string variables;  // which ones were read, for messages
};
std::optional<LauncherRank> launcher_rank();

// The process's local rank on its host under a launcher (for the GPU to use), else 0.
int local_rank();

// The mapping a run uses: the hosts file when one is given, else the launcher's ranks, else one
// process. Every host that sends or receives (`used`) must be played by some process.
HostMapping resolve_mapping(const std::string& hosts_file, int hosts,
                            const std::vector<bool>& used);

}  // namespace fabtwin::hw
