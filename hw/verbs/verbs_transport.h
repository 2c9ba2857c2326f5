// The plan's messages as RC RDMA WRITEs or SENDs between RDMA NICs. Per planned connection one RC
// queue pair at each end; per process one memory registration (host memory, or GPU memory by
// dma-buf or peer memory) holding the send source and one receive slot per incoming connection.
// The ends' descriptors (QPN, a random 24-bit PSN, GID, and at the destination rkey, address and
// length of the slot) travel through the control group; every field a peer sends is checked
// before use. Posting follows perftest: at most tx_depth requests outstanding per queue pair,
// every cq_mod-th request signalled (and the last, and every one above 8 KiB); a completion
// completes the requests before it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "hw/cuda/gpu_memory.h"
#include "hw/run/data_transport.h"
#include "hw/verbs/gid_selection.h"
#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

enum class VerbsVerb { Write, Send };
enum class VerbsMemory { Host, Cuda };

VerbsVerb parse_verbs_verb(const std::string& text);      // "write" | "send"
VerbsMemory parse_verbs_memory(const std::string& text);  // "host" | "cuda"

// What only hardware has, from the scenario's `hw` section (hwrun maps it).
struct VerbsSettings {
  std::string device;  // RDMA device (mlx5_0); empty: the first
  int port = 1;
  int gid_index = -1;  // -1: RoCE v2 IPv4 auto-selection (gid_selection.h)
  AddressFamily gid_family = AddressFamily::IPv4;
  int traffic_class = -1;  // GRH traffic class (ToS byte); -1: the connection's DSCP << 2
  int sl = 0;
  int tx_depth = 128;   // send requests outstanding per queue pair
  int rx_depth = 512;   // receives posted per queue pair (SEND)
  int inline_size = 0;  // bytes sent inline (messages up to it); 0: none
  int cq_mod = 100;     // every cq_mod-th send request signalled
  VerbsVerb verb = VerbsVerb::Write;
  VerbsMemory memory = VerbsMemory::Host;
  int gpu = 0;  // the local GPU (memory cuda)
  GpuRegistrationPath gpu_registration = GpuRegistrationPath::Auto;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  std::filesystem::path sysfs_root = "/sys";
  // The verbs provider; null: libibverbs (ibverbs_device.h). Tests give the fake.
  std::shared_ptr<VerbsProvider> provider;
};

std::unique_ptr<DataTransport> make_verbs_transport(const VerbsSettings& settings);

// The largest InfiniBand path MTU (256..4096) not above `mtu_bytes`, or 256.
int path_mtu_for(int64_t mtu_bytes);

}  // namespace fabtwin::hw
