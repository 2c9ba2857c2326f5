#include "models/fabric/memory_estimate.h"

#include <unistd.h>

#include <cstdio>

#include "models/net/forwarding_table.h"
#include "sim/params.h"

namespace fabtwin {

namespace {

// Measured (docs/performance.md, "Start-up memory"): peak RSS of a 5 us run grows by about
// 3.2 KiB per port on fat-trees (a port's queues and counters at eight priorities, its shared
// buffer and PFC state, its record; hosts' NICs included) and 3.5 KiB on a star; the process
// itself takes ~16 MiB. The constants below stay above both.
constexpr int64_t kBaseBytes = int64_t{16} << 20;
constexpr int64_t kPortBytes = 3300;
constexpr int64_t kHostBytes = 1300;  // a NIC's own state beyond its port
// Routes: a switch of a small fabric keeps an entry index per host; above that, a few runs
// per port, except at rail spines, where every host is a run of its own.
constexpr int64_t kRouteRunBytes = 24;

}  // namespace

int64_t estimated_start_bytes(const TopologySize& size) {
  const int64_t ports = 2 * size.links;
  int64_t routes = 0;
  if (size.hosts <= kDirectHostsLimit) {
    routes = size.switches * size.hosts * int64_t{sizeof(uint32_t)};
  } else {
    routes = ports * kRouteRunBytes + size.spines * size.hosts * int64_t{sizeof(uint32_t)};
  }
  return kBaseBytes + ports * kPortBytes + size.hosts * kHostBytes + routes;
}

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v);
  const size_t first = v < 0 ? 1 : 0;  // the sign
  std::string out = digits.substr(0, first);
  for (size_t i = first; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string gigabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

int64_t machine_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return -1;
  return static_cast<int64_t>(pages) * page;
}

void check_fits_in_memory(const TopologySize& size, int64_t available) {
  const int64_t needed = estimated_start_bytes(size);
  if (available < 0 || needed <= available) return;
  throw ScenarioError("topology",
                      "a " + size.kind + " of " + with_commas(size.hosts) + " hosts, " +
                          with_commas(size.switches) + " switches and " + with_commas(size.links) +
                          " links needs about " + gigabytes(needed) +
                          " of memory to start (estimated from its " + with_commas(2 * size.links) +
                          " ports), more than this machine's " + gigabytes(available) +
                          "; choose a smaller fabric");
}

}  // namespace fabtwin
