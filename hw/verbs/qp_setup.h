// Bringing an RC queue pair from RESET to RTS, with the attributes perftest and NCCL use
// (docs/references.md §10.8): INIT (port, P_Key index 0, the remote access the peer needs),
// RTR (the peer's QPN, its first PSN, the path MTU, the GRH to the peer's GID with our GID index,
// traffic class and hop limit 255, the SL, one outstanding RDMA read, RNR timer 12), RTS (our
// first PSN, ACK timeout 14, retry count 7, RNR retry 7).
#pragma once

#include "hw/verbs/verbs_api.h"

namespace fabtwin::hw {

struct RcPath {
  int port = 1;
  int sgid_index = 0;
  Gid remote_gid;
  uint32_t remote_qpn = 0;
  uint32_t remote_psn = 0;  // the peer's sq_psn: our rq_psn
  uint32_t local_psn = 0;   // our sq_psn: the peer's rq_psn
  int path_mtu_bytes = 4096;
  uint8_t traffic_class = 26 << 2;  // DSCP 26, ECN bits 0
  uint8_t sl = 0;
  uint8_t hop_limit = 255;
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 12;
  uint8_t max_rd_atomic = 1;
  uint32_t remote_access = kAccessRemoteWrite;  // what the peer may do to our memory
};

void move_to_init(QueuePair& qp, const RcPath& path);
void move_to_rtr(QueuePair& qp, const RcPath& path);
void move_to_rts(QueuePair& qp, const RcPath& path);
// All three, in order.
void connect_rc(QueuePair& qp, const RcPath& path);

}  // namespace fabtwin::hw
