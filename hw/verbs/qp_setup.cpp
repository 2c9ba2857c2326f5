#include "hw/verbs/qp_setup.h"

namespace fabtwin::hw {

void move_to_init(QueuePair& qp, const RcPath& path) {
  QpAttributes a;
  a.state = QpState::Init;
  a.pkey_index = 0;
  a.port = path.port;
  a.access = path.remote_access;
  qp.modify(a, kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags);
}

void move_to_rtr(QueuePair& qp, const RcPath& path) {
  QpAttributes a;
  a.state = QpState::ReadyToReceive;
  a.path_mtu_bytes = path.path_mtu_bytes;
  a.dest_qp_num = path.remote_qpn;
  a.rq_psn = path.remote_psn;
  a.max_dest_rd_atomic = path.max_rd_atomic;
  a.min_rnr_timer = path.min_rnr_timer;
  a.av.is_global = true;
  a.av.dgid = path.remote_gid;
  a.av.sgid_index = path.sgid_index;
  a.av.traffic_class = path.traffic_class;
  a.av.hop_limit = path.hop_limit;
  a.av.sl = path.sl;
  a.av.port = path.port;
  qp.modify(a, kQpState | kQpAddressVector | kQpPathMtu | kQpDestQpn | kQpRqPsn |
                   kQpMaxDestReadAtomic | kQpMinRnrTimer);
}

void move_to_rts(QueuePair& qp, const RcPath& path) {
  QpAttributes a;
  a.state = QpState::ReadyToSend;
  a.sq_psn = path.local_psn;
  a.timeout = path.timeout;
  a.retry_cnt = path.retry_cnt;
  a.rnr_retry = path.rnr_retry;
  a.max_rd_atomic = path.max_rd_atomic;
  qp.modify(a, kQpState | kQpSqPsn | kQpTimeout | kQpRetryCount | kQpRnrRetry | kQpMaxReadAtomic);
}

void connect_rc(QueuePair& qp, const RcPath& path) {
  move_to_init(qp, path);
  move_to_rtr(qp, path);
  move_to_rts(qp, path);
}

}  // namespace fabtwin::hw
