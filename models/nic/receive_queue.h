// The receive queue a SEND lands in. The application posts receive work queue elements (WQEs)
// on a queue pair's receive queue; every SEND that arrives consumes one, and a SEND that finds
// none is answered with a receiver-not-ready (RNR) NAK: the requester waits the responder's
// minimum RNR timer and sends again from that packet. The application posts a fresh WQE a while
// after each receive completes. An RDMA WRITE needs none.
//
// The simulator gives each destination NIC one receive queue per source host: the flows from one
// host to another are the messages of the queue pair that connects the two (as perftest or an
// application with one queue pair per peer posts its receives), and each part of a flow split
// over nic.qps_per_flow is one SEND.
#pragma once

#include <cstdint>

namespace fabtwin {

struct ReceiveQueue {
  int64_t depth = 0;   // nic.receive_queue_depth: WQEs the application keeps posted
  int64_t posted = 0;  // WQEs posted and not consumed now

  static ReceiveQueue full(int64_t depth) { return {depth, depth}; }
  // A SEND's first packet takes a WQE: false (an RNR NAK) when none is posted.
  bool take() {
    if (posted == 0) return false;
    --posted;
    return true;
  }
  // The application posted one WQE again (after a receive completed).
  void repost() {
    if (posted < depth) ++posted;
  }
};

}  // namespace fabtwin
