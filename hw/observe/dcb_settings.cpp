#include "hw/observe/dcb_settings.h"

#include <linux/dcbnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "hw/observe/observe_error.h"

namespace fabtwin::hw {

namespace {

const char* const kSource = "DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET)";

// The attributes of a netlink attribute stream, by type (flags masked off).
std::multimap<int, std::pair<const unsigned char*, size_t>> attributes(const unsigned char* at,
                                                                       size_t size,
                                                                       const std::string& what) {
  std::multimap<int, std::pair<const unsigned char*, size_t>> out;
  while (size >= NLA_HDRLEN) {
    nlattr a{};
    std::memcpy(&a, at, sizeof a);
    if (a.nla_len < NLA_HDRLEN || a.nla_len > size) {
      throw ObserveError(what + ": an attribute of length " + std::to_string(a.nla_len) +
                         " where " + std::to_string(size) + " bytes remain");
    }
    out.emplace(a.nla_type & NLA_TYPE_MASK,
                std::make_pair(at + NLA_HDRLEN, static_cast<size_t>(a.nla_len - NLA_HDRLEN)));
    const size_t step = std::min<size_t>(NLA_ALIGN(a.nla_len), size);
    at += step;
    size -= step;
  }
  return out;
}

template <class T>
bool payload(const std::multimap<int, std::pair<const unsigned char*, size_t>>& a, int type,
             T& out) {
  const auto it = a.find(type);
  if (it == a.end() || it->second.second < sizeof(T)) return false;
  std::memcpy(&out, it->second.first, sizeof(T));
  return true;
}

template <size_t N>
std::string list(const __u8 (&values)[N], const char* (*name)(__u8) = nullptr) {
  std::string s;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) s += ',';
    s += name != nullptr ? name(values[i]) : std::to_string(values[i]);
  }
  return s;
}

const char* tsa_name(__u8 tsa) {
  switch (tsa) {
    case IEEE_8021QAZ_TSA_STRICT:
      return "strict";
    case IEEE_8021QAZ_TSA_CB_SHAPER:
      return "cbs";
    case IEEE_8021QAZ_TSA_ETS:
      return "ets";
    case IEEE_8021QAZ_TSA_VENDOR:
      return "vendor";
    default:
      return "?";
  }
}

std::string dcbx_text(__u8 mode) {
  std::string s;
  const std::pair<int, const char*> flags[] = {{DCB_CAP_DCBX_HOST, "host"},
                                               {DCB_CAP_DCBX_LLD_MANAGED, "lld_managed"},
                                               {DCB_CAP_DCBX_VER_CEE, "cee"},
                                               {DCB_CAP_DCBX_VER_IEEE, "ieee"},
                                               {DCB_CAP_DCBX_STATIC, "static"}};
  for (const auto& [bit, name] : flags) {
    if ((mode & bit) != 0) {
      if (!s.empty()) s += ",";
      s += std::string(name);
    }
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<HostSetting> dcb_settings_from_reply(const unsigned char* data, size_t size,
                                                 const std::string& netdev) {
  const std::string what = "DCB reply for " + netdev;
  nlmsghdr h{};
  if (size < sizeof h) throw ObserveError(what + ": " + std::to_string(size) + " bytes, no header");
  std::memcpy(&h, data, sizeof h);
  if (h.nlmsg_len > size || h.nlmsg_len < NLMSG_HDRLEN) {
    throw ObserveError(what + ": header says " + std::to_string(h.nlmsg_len) + " bytes, " +
                       std::to_string(size) + " received");
  }
  if (h.nlmsg_type == NLMSG_ERROR) {
    nlmsgerr e{};
    if (h.nlmsg_len < NLMSG_LENGTH(sizeof e)) throw ObserveError(what + ": a cut error reply");
    std::memcpy(&e, data + NLMSG_HDRLEN, sizeof e);
    const int error = -e.error;
    if (error == EOPNOTSUPP || error == EINVAL) {
      throw ObserveError("DCB settings of " + netdev +
                         " not read: its driver has no DCB support (" + std::strerror(error) + ")");
    }
    if (error == ENODEV)
      throw ObserveError("DCB settings of " + netdev + " not read: no such interface");
    throw ObserveError("DCB settings of " + netdev + " not read: " + std::strerror(error));
  }
  if (h.nlmsg_type != RTM_GETDCB || h.nlmsg_len < NLMSG_LENGTH(sizeof(dcbmsg))) {
    throw ObserveError(what + ": message type " + std::to_string(h.nlmsg_type) +
                       ", expected RTM_GETDCB");
  }
  const size_t offset = NLMSG_LENGTH(sizeof(dcbmsg));
  const auto top = attributes(data + NLMSG_ALIGN(offset), h.nlmsg_len - NLMSG_ALIGN(offset), what);
  std::vector<HostSetting> out;
  __u8 dcbx = 0;
  if (payload(top, DCB_ATTR_DCBX, dcbx)) out.push_back({"dcb/dcbx", dcbx_text(dcbx), kSource});
  const auto ieee_it = top.find(DCB_ATTR_IEEE);
  if (ieee_it == top.end()) return out;
  const auto ieee = attributes(ieee_it->second.first, ieee_it->second.second, what);
  ieee_pfc pfc{};
  if (payload(ieee, DCB_ATTR_IEEE_PFC, pfc)) {
    std::string enabled;
    for (int p = 0; p < 8; ++p) {
      if ((pfc.pfc_en & (1 << p)) != 0) {
        if (!enabled.empty()) enabled += ",";
        enabled += std::to_string(p);
      }
    }
    out.push_back({"dcb/pfc_enabled", enabled.empty() ? "none" : enabled, kSource});
    out.push_back({"dcb/pfc_cap", std::to_string(pfc.pfc_cap), kSource});
  }
  ieee_ets ets{};
  if (payload(ieee, DCB_ATTR_IEEE_ETS, ets)) {
    out.push_back({"dcb/ets/prio_tc", list(ets.prio_tc), kSource});
    out.push_back({"dcb/ets/tc_tx_bw", list(ets.tc_tx_bw), kSource});
    out.push_back({"dcb/ets/tc_tsa", list(ets.tc_tsa, tsa_name), kSource});
  }
  std::map<int, std::string> dscp_by_priority;
  const auto table = ieee.find(DCB_ATTR_IEEE_APP_TABLE);
  if (table != ieee.end()) {
    for (const auto& [type, value] : attributes(table->second.first, table->second.second, what)) {
      dcb_app app{};
      if (type != DCB_ATTR_IEEE_APP || value.second < sizeof app) continue;
      std::memcpy(&app, value.first, sizeof app);
      if (app.selector != IEEE_8021QAZ_APP_SEL_DSCP) continue;
      std::string& d = dscp_by_priority[app.priority];
      {
        if (!d.empty()) d += ",";
        d += std::to_string(app.protocol);
      }
    }
  }
  out.push_back({"dcb/trust", dscp_by_priority.empty() ? "pcp" : "dscp",
                 std::string(kSource) + ": dscp when the application table has DSCP entries"});
  if (!dscp_by_priority.empty()) {
    std::string map;
    for (const auto& [priority, dscps] : dscp_by_priority) {
      {
        if (!map.empty()) map += " ";
        map += ("prio:" + std::to_string(priority) + " dscp:" + dscps);
      }
    }
    out.push_back({"dcb/dscp2prio", map, kSource});
  }
  return out;
}

std::vector<HostSetting> read_dcb_settings(const std::string& netdev) {
  const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) {
    throw ObserveError("DCB settings of " + netdev +
                       " not read: no netlink socket: " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  timeval timeout{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);

  struct {
    nlmsghdr header;
    dcbmsg dcb;
    nlattr name_attribute;
    char name[32];
  } request{};
  const size_t name_bytes = std::min<size_t>(netdev.size(), sizeof request.name - 1) + 1;
  std::memcpy(request.name, netdev.data(), name_bytes - 1);
  request.name_attribute.nla_type = DCB_ATTR_IFNAME;
  request.name_attribute.nla_len = static_cast<__u16>(NLA_HDRLEN + name_bytes);
  request.dcb.dcb_family = AF_UNSPEC;
  request.dcb.cmd = DCB_CMD_IEEE_GET;
  request.header.nlmsg_type = RTM_GETDCB;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = 1;
  request.header.nlmsg_len =
      static_cast<__u32>(NLMSG_LENGTH(sizeof(dcbmsg)) + NLA_ALIGN(request.name_attribute.nla_len));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, &request, request.header.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    throw ObserveError("DCB settings of " + netdev +
                       " not read: netlink request: " + std::strerror(errno));
  }
  std::vector<unsigned char> reply(16384);
  const ssize_t got = ::recv(fd, reply.data(), reply.size(), 0);
  if (got < 0) {
    throw ObserveError("DCB settings of " + netdev +
                       " not read: no netlink reply: " + std::strerror(errno));
  }
  return dcb_settings_from_reply(reply.data(), static_cast<size_t>(got), netdev);
}

}  // namespace fabtwin::hw
