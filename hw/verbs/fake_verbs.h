// An in-process verbs provider for tests: devices that exist only in this process, joined by one
// FakeFabric. It checks what a NIC and the kernel check — the RC state machine and the attribute
// masks each transition requires or allows, attribute ranges, memory bounds, keys, protection
// domains and access rights, send-queue and completion-queue capacity — and moves the bytes: an
// RDMA WRITE copies into the peer's registered memory, a SEND fills the peer's first posted
// receive (none posted: RNR, retried rnr_retry times, for ever at 7). Completions honour
// selective signalling; a send-queue slot is freed when the completion of a later signalled
// request is polled, as on hardware. A path the peer does not answer (unknown GID or QPN, a peer
// not connected back, PSNs that disagree) completes with IBV_WC_RETRY_EXC_ERR; errors can be
// injected. Work is done when requests are posted and when any completion queue is polled.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

struct FakeDeviceSpec {
  std::string name = "fake_0";
  std::vector<GidEntry> gids;  // port 1's table
  int active_mtu_bytes = 4096;
  bool port_active = true;
  bool dmabuf_supported = true;  // ibv_reg_dmabuf_mr works (else EOPNOTSUPP)
  int max_qp_wr = 32768;
  int max_cqe = 4194303;
  int max_qp_rd_atom = 16;
};

// A device spec with one RoCE v2 IPv4 GID at index `index` (after a link-local v1 and v2 pair),
// like a ConnectX port with one IPv4 address.
FakeDeviceSpec fake_roce_device(const std::string& name, const std::string& ipv4, int index = 3);

struct FakeFabricState;

class FakeFabric {
 public:
  FakeFabric();
  ~FakeFabric();
  void add_device(const FakeDeviceSpec& spec);
  // The send request processed on `device` after `after` more successful ones completes with
  // `status`; its QP goes to the error state and flushes the rest, as on hardware.
  void inject_send_error(const std::string& device, WcStatus status, int after = 0);
  // What moved, for tests.
  int64_t bytes_written() const;
  int64_t bytes_sent() const;
  int64_t rnr_naks() const;
  // A provider seeing this fabric's devices (one per simulated process, or shared).
  std::unique_ptr<VerbsProvider> provider();

 private:
  std::shared_ptr<FakeFabricState> state_;
};

}  // namespace fabtwin::hw
