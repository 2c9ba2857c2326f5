// An Ethernet switch, store and forward or cut-through, with a port-to-port latency (both off by
// default: a frame may leave as its last bit arrives). An arriving frame is classified by DSCP to a
// priority, has its TTL decremented (dropped at 0), is routed (ECMP over equal-cost ports, per
// priority where a static route says so), may move to another priority (Tagger-style rewrite), and
// is admitted by the shared-buffer MMU; lossless priorities send PFC XOFF/XON upstream as their
// ingress groups cross the MMU's thresholds. Egress queues are served strict-priority then DWRR,
// skip priorities paused by the peer, and mark ECN (RED) at dequeue or enqueue.
#pragma once

#include <tuple>
#include <vector>

#include "models/net/network_node.h"
#include "models/net/routing.h"
#include "models/net/shared_buffer.h"
#include "models/net/switch_config.h"

namespace fabtwin {

struct QueueSample {
  Time time;
  uint32_t port;
  int64_t bytes;
  Time busy;  // the port's transmitting time up to `time` (link utilization)
};

struct BufferSample {
  Time time;
  int64_t bytes;
};

class Switch final : public NetworkNode {
 public:
  Switch(std::string name, PacketPool& pool, ForwardingTable forwarding, int node,
         const SwitchConfig& config);

  // Before begin(): the link of `port` goes down or up at `at`, and the switch installs
  // `table` at `at` (routes recomputed after link events).
  void add_link_change(Time at, uint32_t port, bool up);
  void add_route_update(Time at, ForwardingTable table);

  // Sizes the buffer once the ports are wired (headroom depends on each port's link) and
  // schedules the first sample and the link changes and route updates; call once the switch is
  // added to a simulator.
  void begin();

  // Every frame takes the checked path (TTL; set when a frame's TTL can run out on its route).
  // A switch takes it by itself when its table has per-priority entries, rewrites or a missing
  // route, or its links change.
  void check_every_frame(int ttl) {
    checked_ = true;
    ttl_floor_ = 255 - ttl;
  }

  // Before begin(): route the priorities whose strategy is not ECMP adaptively (they take the
  // checked path). Switches with ECMP for every priority keep the plain path.
  void set_routing_strategies(const AdaptiveConfig& config,
                              const std::array<RoutingStrategy, kPriorities>& strategies);

  const ForwardingTable& forwarding() const { return forwarding_; }
  int64_t flowlet_moves() const { return router_ ? router_->flowlet_moves() : 0; }
  bool link_up(uint32_t port) const { return link_down_.empty() || !link_down_[port]; }

  const SharedBuffer& buffer() const { return *buffer_; }
  int64_t headroom_overflows() const;
  const std::vector<QueueSample>& queue_samples() const { return samples_; }
  const std::vector<BufferSample>& buffer_samples() const { return buffer_samples_; }
  void discard_background_after(unsigned __int128 stop) override;

 protected:
  friend class NetworkNode;  // dispatch() calls the handlers below directly
  void handle(const Event& e) override { dispatch(*this, e); }
  void on_arrival(uint32_t port, Packet* p) override;
  void on_transmit_done(uint32_t port) override;
  void on_timer(const Event& e) override;
  void watchdog_flush(uint32_t port, int priority) override;

 private:
  // Written only where it changes (the NIC set it from the same DSCP map, as a rule): a packet
  // whose line stays clean costs no write-back when the cache evicts it while it waits in a
  // queue, and a frame crosses five switches.
  static void set_priority(Packet* p, int prio) {
    if (p->priority != prio) p->priority = static_cast<uint8_t>(prio);
  }
  void start_transmission(uint32_t port);
  // RED/ECN at `port` on a frame in hand (at its arrival): nothing to do (ECN off, or the queue
  // at or below Kmin) is decided inline.
  void maybe_mark(EgressPort& port, int priority, Packet* p, int64_t queue_bytes, bool ect) {
    if (port.may_mark(queue_bytes) && marks_above_kmin(port, priority, queue_bytes, ect)) {
      p->ecn = Ecn::Ce;
    }
  }
  // RED's verdict on a frame above Kmin, counted at the port. A frame leaving its queue is
  // judged from its queue entry (`ect`), and its mark goes with its arrival (kArrivalMarked).
  [[gnu::always_inline]] bool marks_above_kmin(EgressPort& port, int priority, int64_t queue_bytes,
                                               bool ect) {
    if (!port.red().should_mark(queue_bytes, rng())) return false;
    if (!ect) return false;  // only ECN-capable transport is marked
    ++port.counters[priority].ecn_marks;
    return true;
  }
  Time refresh_interval(uint32_t port) const;
  void drop(PriorityCounters& c, int64_t PriorityCounters::*cause, Packet* p);
  void on_arrival_checked(uint32_t port, Packet* p);
  void forward(uint32_t in_port, Packet* p, int prio, uint32_t out, int queue);
  void egress(uint32_t in_port, Packet* p, int prio, uint32_t out, int queue);
  // Free wire, every queue empty, no PFC frame waiting and `queue` not paused.
  bool egress_idle(uint32_t out, int queue) const {
    const EgressPort& port = ports_[out];
    return port.backlog == 0 && port_free(out) && !port.pause_waiting() &&
           !port.paused(queue, now());
  }
  void pass_through(uint32_t in_port, Packet* p, int prio, uint32_t out, int queue, Time start);
  // The forwarding pipeline (fabric.switch.forwarding and port_to_port_latency): a frame
  // admitted to the buffer waits here until its egress may start it.
  struct PipelineSlot {
    Packet* packet;
    Time arrived;  // its last bit
    uint32_t out;
    uint16_t in_port;
    uint8_t group;     // its ingress priority group
    uint8_t queue;     // its egress queue
    bool cut_through;  // waiting to start cut through (else to go to its egress)
  };
  void enter_pipeline(uint32_t in_port, Packet* p, int prio, uint32_t out, int queue);
  void wait_in_pipeline(Time until, const PipelineSlot& slot);
  void leave_pipeline(uint32_t index);
  void release(const QueuedPacket& q, uint32_t port_index, int group, int prio);
  void dequeue(uint32_t port_index, int prio, int group);
  bool lost_in_flight(uint32_t port, Packet* p);
  void set_link(uint32_t port, bool up);

  // What a frame reads of the switch comes first, on four cache lines (with the component's
  // first two: fingerprint, sequence and ports): a fabric of hundreds of switches does not keep
  // them all cached between one switch's frames, and each line more is a miss more
  // (docs/performance.md, "A switch's lines"). First the flags, the buffer and the pausing bits:
  alignas(64) bool checked_ = false;  // frames take on_arrival_checked()
  // Cut-through or a port-to-port latency: admitted frames take enter_pipeline().
  bool pipelined_ = false;
  bool rewrites_ = false;  // some table rewrites priorities: queues' ingress groups differ
  // Link failures: only a switch with link changes scheduled checks link state per frame.
  bool links_change_ = false;
  uint32_t ecmp_salt_;
  std::unique_ptr<SharedBuffer> buffer_;
  // PFC each ingress port sends upstream as its priority groups cross XOFF and XON.
  PauseSenders pause_senders_;
  // Then the forwarding lookup (the table's first line), and the configuration's DSCP map,
  // flags, scheduler and lossless groups (its first two lines).
  alignas(64) ForwardingTable forwarding_;
  alignas(64) SwitchConfig config_;
  std::vector<PipelineSlot> pipeline_;  // slots of frames in the pipeline, reused
  std::vector<uint32_t> free_slots_;
  int ttl_floor_ = -1;              // 255 - routing.ttl where the TTL can run out (never otherwise)
  std::vector<uint8_t> link_down_;  // [port]: 1 while its link is down
  std::vector<Time> last_change_;   // [port]: when its link last went down or up
  std::vector<std::tuple<Time, uint32_t, bool>> link_changes_;  // (time, port, up)
  std::vector<std::pair<Time, ForwardingTable>> route_updates_;
  std::array<uint8_t, kPriorities> priority_dscp_{};  // the lowest DSCP mapped to each priority
  std::unique_ptr<AdaptiveRouter> router_;            // null: ECMP for every priority
  std::vector<QueueSample> samples_;
  std::vector<BufferSample> buffer_samples_;
  // (order of the sampling event, sizes of the two sample lists before it), for undoing.
  std::vector<std::tuple<unsigned __int128, size_t, size_t>> sample_events_;
};

}  // namespace fabtwin
