// RoCE GID index auto-selection, scored the way perftest scores a port's GID table
// (docs/references.md §10.9): +100 when the entry's address family is the one wanted (IPv4:
// an IPv4-mapped GID), +10 when it is not link-local (fe80::/10), +2 for RoCE v2, +1 for RoCE v1;
// the highest score wins, the lowest index among equals. With IPv4 wanted, a RoCE v2 IPv4 entry
// scores 112 and is chosen over its RoCE v1 twin (111) and the link-local entries (100, 101).
// The table comes from verbs (VerbsDevice::gid_table) or from sysfs
// (<root>/class/infiniband/<dev>/ports/<port>/gids/<i> and gid_attrs/types/<i>).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

enum class AddressFamily { IPv4, IPv6 };

int gid_score(const GidEntry& entry, AddressFamily family);

// The best-scoring entry; throws std::runtime_error naming `where` when the table is empty.
GidEntry select_gid(const std::vector<GidEntry>& table, AddressFamily family,
                    const std::string& where);

// The port's GID table as sysfs shows it under `root` (normally /sys): entries whose GID is
// all zero, or whose type cannot be read (the kernel refuses to read an unused entry's type),
// are left out. Throws std::runtime_error when the port has no gids folder.
std::vector<GidEntry> read_sysfs_gid_table(const std::filesystem::path& root,
                                           const std::string& device, int port);

// "RoCE v2" -> RoCEv2, "IB/RoCE v1" -> RoCEv1, "IB" -> InfiniBand; throws on anything else.
GidType parse_gid_type(const std::string& text);

}  // namespace fabtwin::hw
