// A host's RoCEv2 NIC: one port, reliable-connected queue pairs (queue_pair.h) served round
// robin at the line (or each QP's) rate, DCQCN's reaction point per requester QP and its
// notification point (notification_point.h), and a receive buffer that may pause the link
// (receive_buffer.h). The NIC schedules the events of its parts and puts their packets on the
// wire: control frames first, then responder ACKs/NAKs and CNPs, then data.
#pragma once

#include <vector>

#include "models/cc/algorithm.h"
#include "models/net/network_node.h"
#include "models/nic/notification_point.h"
#include "models/nic/queue_pair.h"
#include "models/nic/receive_buffer.h"
#include "models/nic/receive_queue.h"
#include "models/nic/receiver_mode.h"
#include "models/traffic/flow.h"
#include "sim/params.h"

namespace fabtwin {

// The NIC's own parameters (kNicParams in host_nic.cpp declares their defaults) and the
// settings it takes from other sections when the scenario is resolved (FabricSpec).
struct NicConfig {
  Bytes mtu;          // nic.mtu: payload bytes per packet (RoCE path MTU)
  int ack_every;      // nic.ack_every: responder ACKs every n-th in-order packet and the last one
  int ack_dscp = -1;  // nic.ack_dscp: DSCP of ACKs and NAKs; -1: the queue pair's own
  Time ack_timeout;   // nic.ack_timeout: requester retransmits from the first unacknowledged PSN
  // Receive side: a NIC that drains slower than its link (a PCIe or host bottleneck) buffers
  // arrivals and pauses the link while the buffer is above rx_xoff, until it is below rx_xon.
  BitsPerSec rx_drain_rate;  // nic.rx_drain_rate; 0: drains at line rate, never pauses
  int64_t rx_xoff;
  int64_t rx_xon;
  // nic.rx_stall: the receive pipeline of these hosts' NICs takes nothing off the receive
  // buffer from `start` to `end` (a stalled NIC, the root of a PFC storm); none by default.
  std::vector<int> rx_stall_hosts;
  Time rx_stall_start;
  Time rx_stall_end;
  ReceiverConfig receiver;  // nic.receiver: go-back-N, out-of-order placement or selective repeat
  int qps_per_flow;         // nic.qps_per_flow: a flow's data split over this many QPs
  // SEND (receive_queue.h): receive WQEs kept posted per queue pair, the application's delay
  // from a receive completion to posting the WQE again, and the responder's minimum RNR timer.
  int64_t receive_queue_depth;  // nic.receive_queue_depth
  Time receive_repost_delay;    // nic.receive_repost_delay
  Time min_rnr_timer;           // nic.min_rnr_timer
  // nic.message_overhead: a flow's first packet leaves no earlier than its start plus this
  // (doorbell, WQE fetch over PCIe); collective messages have the GPU node's latencies instead.
  Time message_overhead;
  // From other sections.
  std::array<uint8_t, 64> dscp_to_priority;  // fabric.qos: the fabric's QoS map (trust DSCP)
  int pause_quanta;                          // fabric.pfc.pause_quanta
  bool auto_refresh;                         // fabric.pfc.refresh_interval = auto
  Time pause_refresh;                        // fabric.pfc.refresh_interval otherwise
  PfcWatchdogConfig watchdog;                // fabric.pfc.watchdog
  bool pfc;                                  // fabric.pfc.enabled
  std::array<bool, 8> lossless;              // fabric.pfc.lossless_priorities
  CcConfig cc;                               // nic.cc
  Time rate_sample_interval;                 // output.rate_sample_interval (0: no rate traces)
  // Host side of the NIC (set for GPU nodes): DMA reads of payload over PCIe pace transmission
  // when slower than the link; notifications reach the GPU node `host_latency` after the event.
  BitsPerSec tx_dma_rate;  // 0: not a bottleneck
  Time host_latency;

  bool operator==(const NicConfig&) const = default;
};

// The data of a kNicPostMessage event (handlers.h): post `bytes` (below 2^39) on connection QP
// `qp`, with a zero-byte WRITE with immediate after the data if `immediate`.
inline constexpr uint64_t kPostImmediate = uint64_t{1} << 39;
inline uint64_t post_data(uint32_t qp, int64_t bytes, bool immediate = false) {
  return static_cast<uint64_t>(qp) << 40 | (immediate ? kPostImmediate : 0) |
         static_cast<uint64_t>(bytes);
}

// A flow's part on QP `part` of its `parts` (nic.qps_per_flow): NCCL's split, ceil(size / n)
// rounded up to 128 bytes per QP, the last ones taking what is left (possibly nothing). The
// hardware backend splits its messages the same way (hw/run/plan.cpp).
int64_t part_bytes(int64_t size, int parts, int part);

// One sample of a queue pair's congestion-control state.
struct RateSample {
  Time time;
  uint32_t flow;
  CcState state;
};

class HostNic final : public NetworkNode {
 public:
  HostNic(std::string name, PacketPool& pool, int host, const NicConfig& config);

  // Registers a flow this host sends (requester side) or receives (responder side): qps_per_flow
  // consecutive QPs, each with its own UDP source port, the first one's index returned.
  // Both sides must be added before begin(); connect_send_qp links the two halves.
  uint32_t add_send_qp(const FlowSpec& flow);
  uint32_t add_receive_qp(const FlowSpec& flow, uint32_t sender_qp);
  void connect_send_qp(uint32_t qp, uint32_t receiver_qp);
  // Connection QPs: one of `lanes` QPs of a persistent connection (NCCL's QPs per connection,
  // messages alternating over them). Messages are posted at run time by the host component
  // (kNicPostMessage events) and reported back to it; they are not flows.
  uint32_t add_connection_send_qp(uint32_t connection, int dst, int dscp, uint32_t lane,
                                  uint32_t lanes);
  uint32_t add_connection_receive_qp(uint32_t connection, int src, int dscp, uint32_t sender_qp,
                                     uint32_t lane, uint32_t lanes);
  void set_host(ComponentId host) { host_component_ = host; }
  // Before begin(): the NIC's link goes down or up at `at`. While it is down the NIC sends
  // nothing (its queue pairs time out and go back once it is up again).
  void add_link_change(Time at, bool up);
  bool link_up() const { return !link_down_; }
  // Schedules the first flow start; call once the NIC is added to a simulator.
  void begin();

  // Fills the parts of each flow's record this NIC knows (requester or responder side).
  void collect(std::vector<FlowRecord>& records) const;
  int64_t data_packets_sent() const { return data_packets_sent_; }
  // Rate cuts of the connection QPs (flows' cuts are in their records).
  int64_t connection_rate_cuts() const;
  const std::vector<RateSample>& rate_samples() const { return rate_samples_; }
  // Whether a send queue pair of `priority` has data left to send (for the deadlock detector).
  bool sends_waiting(int priority) const;
  void discard_background_after(unsigned __int128 stop) override;

  static const ParamGroup& params();
  // The `nic` section's own parameters; the settings from other sections are left zero.
  static NicConfig read_config(const nlohmann::json& scenario);

 protected:
  friend class NetworkNode;  // dispatch() calls the handlers below directly
  void handle(const Event& e) override { dispatch(*this, e); }
  void on_arrival(uint32_t port, Packet* p) override;
  void on_transmit_done(uint32_t port) override;
  void on_timer(const Event& e) override;
  bool watchdog_backlog(uint32_t port, int priority) const override;

 private:
  // Transmits frame `p`, unless the PFC watchdog drops its priority.
  [[gnu::always_inline]] void send_frame(Packet* p, int frame, int priority) {
    if (ports_[0].watchdog_drop >> priority & 1) [[unlikely]] {
      watchdog_drop_frame(p, frame, priority);
      return;
    }
    transmit(0, p, frame, priority);
  }
  void watchdog_drop_frame(Packet* p, int frame, int priority);
  void complete(RequesterQp& qp);
  void receive_data(Packet* p);
  void on_cnp(const Packet& p);
  void send_cnp(const ResponderQp& rq);
  void arm_cc_timer(RequesterQp& qp);
  void pump();
  bool send_next_data_packet();
  void activate(uint32_t qp);
  void leave_rotation(RequesterQp& qp, uint32_t index);
  void on_data(Packet* p);
  void on_ack(const Packet& p);
  void on_nak(const Packet& p);
  void on_rnr_nak(const Packet& p);
  bool claim_receive_wqe(ResponderQp& rq, const Packet& p);
  void on_sack(const Packet& p);
  void acknowledged(RequesterQp& qp, uint32_t index);
  void send_reply(PacketType type, ResponderQp& rq, Time echo, uint32_t sacked_psn = 0);
  bool write_selective(RequesterQp& qp, Packet& p, uint32_t index);
  uint32_t new_send_qp(const FlowSpec& flow);
  uint32_t new_receive_qp(const FlowSpec& flow, uint32_t sender_qp);
  // The retransmission timeout of `qp`: nic.ack_timeout, or IRN's under selective repeat.
  Time timeout_of(const RequesterQp& qp) const {
    return qp.selective() ? qp.retransmit_timeout(config_.receiver) : config_.ack_timeout;
  }
  // When send QP `qp` of a flow may send its first packet: the flow's start plus the NIC's
  // per-message overhead.
  Time first_packet_at(uint32_t qp) const {
    return send_qps_[qp].flow.start + config_.message_overhead;
  }
  void arm_timer(RequesterQp& qp);
  void go_back_to(RequesterQp& qp, uint32_t psn);
  void post_message(uint32_t qp, int64_t bytes, bool immediate);
  void notify_host(uint32_t kind, uint32_t connection, uint64_t sequence);
  void notify_acked_messages(RequesterQp& qp);
  void set_link(bool up);

  int host_;
  NicConfig config_;
  NotificationPoint notification_point_;
  std::vector<RequesterQp> send_qps_;
  std::vector<ResponderQp> receive_qps_;
  std::vector<ReceiveQueue> receive_queues_;       // SEND: one per source host that sends any
  std::vector<std::pair<int, int32_t>> queue_of_;  // (source host, receive queue), sorted
  std::vector<uint32_t> start_order_;              // send QPs by (start, flow id)
  size_t next_start_ = 0;
  std::vector<uint32_t> rotation_;  // active send QPs, served round robin
  size_t rotation_next_ = 0;
  Time wake_at_ = Time::max();  // a pacing wake-up is scheduled for this time
  ReceiveBuffer rx_buffer_;
  Time rx_stall_start_{};  // this NIC's receive stall (nic.rx_stall), empty if none
  Time rx_stall_end_{};
  std::vector<RateSample> rate_samples_;
  std::vector<std::pair<unsigned __int128, size_t>> sample_events_;  // for undoing
  int64_t data_packets_sent_ = 0;
  bool links_change_ = false;
  bool link_down_ = false;
  Time last_change_{-1};  // the link last went down or up
  std::vector<std::pair<Time, bool>> link_changes_;
  Time dma_ready_{};  // tx_dma_rate: the next payload has been read from host memory
  ComponentId host_component_ = 0;
};

}  // namespace fabtwin
