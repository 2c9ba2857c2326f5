#include "hw/observe/ethtool_stats.h"

#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>

#include "hw/observe/observe_error.h"

namespace fabtwin::hw {

namespace {

// A datagram socket for the ioctl, closed on every path.
class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// One SIOCETHTOOL request on `netdev`; returns errno (0 on success).
int ethtool_request(const Socket& s, const std::string& netdev, void* command) {
  ifreq request{};
  std::strncpy(request.ifr_name, netdev.c_str(), IFNAMSIZ - 1);
  request.ifr_data = static_cast<char*>(command);
  return ::ioctl(s.fd(), SIOCETHTOOL, &request) == 0 ? 0 : errno;
}

[[noreturn]] void refuse(const std::string& netdev, const char* request, int error) {
  if (error == ENODEV) throw ObserveError("no network interface '" + netdev + "'");
  const std::string reason = std::string("SIOCETHTOOL ") + request + ": " + std::strerror(error);
  if (error == EOPNOTSUPP) {
    throw ObserveError("ethtool statistics of " + netdev + ": not offered by its driver (" +
                       reason + ")");
  }
  throw ObserveError("ethtool statistics of " + netdev + ": " + reason);
}

// The number of statistics the driver offers.
uint32_t statistics_count(const Socket& s, const std::string& netdev) {
  // ethtool_sset_info ends in a flexible array holding one count per set asked for.
  alignas(
      ethtool_sset_info) unsigned char buffer[sizeof(ethtool_sset_info) + sizeof(uint32_t)] = {};
  auto* sset = reinterpret_cast<ethtool_sset_info*>(buffer);
  sset->cmd = ETHTOOL_GSSET_INFO;
  sset->sset_mask = 1ULL << ETH_SS_STATS;
  const int error = ethtool_request(s, netdev, sset);
  if (error == 0) return (sset->sset_mask & (1ULL << ETH_SS_STATS)) != 0 ? sset->data[0] : 0;
  if (error != EOPNOTSUPP) refuse(netdev, "ETHTOOL_GSSET_INFO", error);
  // Drivers older than the set-info request give the count in the driver information.
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  const int fallback = ethtool_request(s, netdev, &info);
  if (fallback != 0) refuse(netdev, "ETHTOOL_GSSET_INFO", error);
  if (info.n_stats == 0) refuse(netdev, "ETHTOOL_GSSET_INFO", error);
  return info.n_stats;
}

}  // namespace

std::vector<CounterValue> read_ethtool_statistics(const std::string& netdev) {
  if (netdev.empty() || netdev.size() >= IFNAMSIZ) {
    throw ObserveError("no network interface '" + netdev + "' (a name of 1 to " +
                       std::to_string(IFNAMSIZ - 1) + " characters expected)");
  }
  const Socket s;
  if (s.fd() < 0) {
    throw ObserveError("ethtool statistics of " + netdev +
                       ": no socket for the request: " + std::strerror(errno));
  }
  const uint32_t n = statistics_count(s, netdev);
  if (n == 0) return {};

  const size_t names_bytes = sizeof(ethtool_gstrings) + size_t{n} * ETH_GSTRING_LEN;
  std::unique_ptr<unsigned char[]> names_buffer(new unsigned char[names_bytes]());
  auto* names = reinterpret_cast<ethtool_gstrings*>(names_buffer.get());
  names->cmd = ETHTOOL_GSTRINGS;
  names->string_set = ETH_SS_STATS;
  names->len = n;
  if (const int e = ethtool_request(s, netdev, names)) refuse(netdev, "ETHTOOL_GSTRINGS", e);

  const size_t stats_bytes = sizeof(ethtool_stats) + size_t{n} * sizeof(uint64_t);
  std::unique_ptr<unsigned char[]> stats_buffer(new unsigned char[stats_bytes]());
  auto* stats = reinterpret_cast<ethtool_stats*>(stats_buffer.get());
  stats->cmd = ETHTOOL_GSTATS;
  stats->n_stats = n;
  if (const int e = ethtool_request(s, netdev, stats)) refuse(netdev, "ETHTOOL_GSTATS", e);

  const uint32_t got = std::min(n, std::min(names->len, stats->n_stats));
  std::vector<CounterValue> values;
  values.reserve(got);
  for (uint32_t i = 0; i < got; ++i) {
    const char* name = reinterpret_cast<const char*>(names->data) + size_t{i} * ETH_GSTRING_LEN;
    values.push_back(
        {"ethtool", netdev, std::string(name, strnlen(name, ETH_GSTRING_LEN)), stats->data[i]});
  }
  return values;
}

std::vector<CounterValue> parse_ethtool_statistics(std::string_view text,
                                                   const std::string& netdev) {
  std::vector<CounterValue> values;
  int number = 0;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++number;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    if (line.empty() || line == "NIC statistics:") continue;
    const size_t colon = line.rfind(':');
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    uint64_t v = 0;
    const auto [at, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (colon == std::string_view::npos || colon == 0 || value.empty() || ec != std::errc{} ||
        at != value.data() + value.size()) {
      throw ObserveError("ethtool -S output of " + netdev + ", line " + std::to_string(number) +
                         ": expected 'name: unsigned value', found '" + std::string(line) + "'");
    }
    values.push_back({"ethtool", netdev, std::string(line.substr(0, colon)), v});
  }
  return values;
}

std::optional<PfcStatistic> pfc_statistic(std::string_view name) {
  PfcStatistic s;
  if (name.starts_with("rx_prio")) {
    s.direction = "rx";
  } else if (name.starts_with("tx_prio")) {
    s.direction = "tx";
  } else {
    return std::nullopt;
  }
  name.remove_prefix(7);
  const auto [at, ec] = std::from_chars(name.data(), name.data() + name.size(), s.priority);
  if (ec != std::errc{} || at == name.data() || s.priority < 0 || s.priority > 7) {
    return std::nullopt;
  }
  name.remove_prefix(static_cast<size_t>(at - name.data()));
  for (const char* kind : {"_pause", "_pause_duration", "_pause_transition"}) {
    if (name == kind) {
      s.kind = std::string(kind + 1);
      return s;
    }
  }
  return std::nullopt;
}

}  // namespace fabtwin::hw
