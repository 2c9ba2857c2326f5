// Common base of switches and host NICs: a set of egress ports and the link contract.
// A packet handed to transmit() belongs to the link until it arrives at the peer, which then
// owns it (forwards it, consumes it and releases it to the pool, or drops it).
#pragma once

#include <array>
#include <string>
#include <vector>

#include "models/net/egress_port.h"
#include "models/net/handlers.h"
#include "models/net/packet.h"
#include "models/net/pfc.h"
#include "models/net/priority_flow_control.h"
#include "sim/simulator.h"

namespace fabtwin {

class NetworkNode : public Component {
 public:
  // `pause_handlers`: this node's handlers for PFC's timers (see the PFC section below).
  NetworkNode(std::string name, PacketPool& pool, PauseHandlers pause_handlers = {})
      : Component(std::move(name)), pool_(pool), pause_handlers_(pause_handlers) {}

  std::vector<EgressPort>& ports() { return ports_; }
  // Closes the pause intervals still open on every port at `end` (the end of the run).
  void close_pauses(Time end) {
    for (EgressPort& port : ports_) {
      for (int p = 0; p < kPriorities; ++p) port.close_pause(p, end);
    }
  }
  const std::vector<EgressPort>& ports() const { return ports_; }

  void handle(const Event& e) override { dispatch(*this, e); }

 protected:
  // A node's events to its handlers. A final node class (Switch, HostNic) overrides handle() to
  // call this with itself, so that its handlers are called directly: handle() is then the only
  // call through the vtable per event.
  template <class Node>
  [[gnu::always_inline]] static void dispatch(Node& node, const Event& e) {
    switch (kind_handler(e.kind)) {
      case kPacketArrival: {
        auto* p = reinterpret_cast<Packet*>(e.data & ~kArrivalMarked);
        // A frame marked at an earlier hop too is not written again: its line stays clean.
        if ((e.data & kArrivalMarked) && p->ecn != Ecn::Ce) p->ecn = Ecn::Ce;
        node.on_arrival(kind_index(e.kind), p);
        break;
      }
      case kTransmitDone:
        node.ports_[kind_index(e.kind)].done_scheduled = false;
        node.on_transmit_done(kind_index(e.kind));
        break;
      default:
        node.on_timer(e);
    }
  }

  virtual void on_arrival(uint32_t port, Packet* p) = 0;
  virtual void on_transmit_done(uint32_t port) = 0;
  virtual void on_timer(const Event& e) = 0;

  bool port_free(uint32_t port_index) const { return ports_[port_index].busy_until <= now(); }

  // Puts a MAC control frame (PFC) on the free wire of `port`; it is not a queue's traffic.
  void transmit_control(uint32_t port_index, Packet* p) {
    EgressPort& port = ports_[port_index];
    const Time wire = port.wire_time(p->frame);
    port.busy_until = now() + wire;
    port.busy_time += wire;
    schedule(now() + wire + port.delay, port.peer,
             make_kind(kPacketArrival, port.peer_port) | kPrefetchPayload,
             reinterpret_cast<uint64_t>(p));
  }

  // Sends the first PFC frame waiting at `port`, if any (the port must be free); true if sent.
  [[gnu::always_inline]] bool transmit_pending_pause(uint32_t port_index) {
    if (!ports_[port_index].pause_waiting()) return false;
    send_first_pending_pause(port_index);
    return true;
  }
  void send_first_pending_pause(uint32_t port_index);  // out of line: rare

  // Priority flow control (priority_flow_control.h), the same for every node. A node that sends
  // PFC keeps PauseSenders (sender `port` for its port `port`) and calls these as its ingress
  // crosses XOFF and XON and when the refresh timer (pause_handlers_.refresh) fires; PFC frames
  // received at `port` go to receive_pause(), the expiry timer (pause_handlers_.expired) to
  // pause_expired(). A port that may send again is handed to on_transmit_done().
  void pause_upstream(uint32_t port, PauseSenders& senders, int priority);
  void resume_upstream(uint32_t port, PauseSenders& senders, int priority);
  // Re-sends XOFF for every priority still paused, or XON where `should_resume(priority)`.
  template <class ShouldResume>
  void refresh_pauses(uint32_t port, PauseSenders& senders, ShouldResume should_resume) {
    senders.refresh_fired(port);
    for (int prio = 0; prio < kPriorities; ++prio) {
      if (!senders.pausing(port, prio)) continue;
      const bool resume = should_resume(prio);
      if (resume) senders.stop(port, prio);
      send_pause(port, senders, prio, !resume);
    }
  }
  void receive_pause(uint32_t port, const Packet& f);
  void pause_expired(uint32_t port, int priority);
  // Defect fix: an XOFF that ran out at the peer while the ingress stays over its threshold
  // (a refresh interval longer than the pause time) is re-sent at the next arrival instead of
  // waiting for the refresh timer, so the peer's frames do not overflow the headroom.
  void lapse_resend(uint32_t port, PauseSenders& senders, int priority) {
    send_pause(port, senders, priority, true);
  }

  // The PFC watchdog (priority_flow_control.h) of the egress queues of the `lossless`
  // priorities (bit p), when `config.enabled`; the node's pause_handlers_.watchdog events go
  // to watchdog_poll(). Off, it costs nothing: no timer runs and no state is read.
  void set_watchdog(const PfcWatchdogConfig& config, uint8_t lossless);
  void watchdog_poll(uint32_t port);
  // Whether queue `priority` of `port` has frames waiting, and discarding them (the drop
  // action), counting each in watchdog_drops: the owner's queues.
  virtual bool watchdog_backlog(uint32_t port, int priority) const {
    return !ports_[port].queues[priority].empty();
  }
  virtual void watchdog_flush(uint32_t port_index, int priority) {
    EgressPort& port = ports_[port_index];
    while (!port.queues[priority].empty()) {
      const QueuedPacket q = port.dequeue(priority);
      watchdog_discard(port, priority, q.packet, q.frame);
    }
  }
  // Counts frame `p` (of `priority`) discarded by the watchdog at `port` and releases it.
  void watchdog_discard(EgressPort& port, int priority, Packet* p, int frame) {
    PriorityCounters& c = port.counters[priority];
    ++c.drops;
    c.drop_bytes += frame;
    ++c.watchdog_drops;
    pool().release(p);
  }

  // Sends the head of queue `priority` of `port`.
  void transmit_queued(uint32_t port_index, int priority) {
    const QueuedPacket q = ports_[port_index].dequeue(priority);
    transmit(port_index, q.packet, q.frame, priority);
  }

  // Asks for on_transmit_done() when the frame now on the wire of `port` ends. Only owners
  // with more to send ask, so an idle port costs no event.
  [[gnu::always_inline]] void request_transmit_done(uint32_t port_index) {
    EgressPort& port = ports_[port_index];
    if (port.done_scheduled) return;
    port.done_scheduled = true;
    // The handler mostly serves the head of the highest backlogged queue, whose entry was
    // written long ago: the event queue prefetches it (a hint; the handler does not use it).
    if (port.backlog == 0) {
      schedule_self(port.busy_until, make_kind(kTransmitDone, port_index), 0);
      return;
    }
    const int top = 31 - std::countl_zero(static_cast<unsigned>(port.backlog));
    schedule_self(port.busy_until, make_kind(kTransmitDone, port_index) | kPrefetchPayload,
                  reinterpret_cast<uint64_t>(&port.queues[top].front()));
  }

  // Puts packet `p` (a `frame`-byte frame of `priority`) on the free wire of `port` now: the
  // port is busy for the frame's wire time and the peer receives the whole frame (store and
  // forward) one propagation delay later. The packet itself is not read here; `marked`: the
  // frame was marked CE as it left, which its arrival writes into it (kArrivalMarked).
  [[gnu::always_inline]] void transmit(uint32_t port_index, Packet* p, int frame, int priority,
                                       bool marked = false) {
    transmit_from(now(), port_index, p, frame, priority, marked);
  }
  // The same for a frame whose transmission began at `start`: now, or for a frame a switch cut
  // through, earlier, though never so early that its last bit leaves before now(). Its arrival
  // is then at least one propagation delay from now, as the partitions' lookahead requires.
  [[gnu::always_inline]] void transmit_from(Time start, uint32_t port_index, Packet* p, int frame,
                                            int priority, bool marked = false) {
    EgressPort& port = ports_[port_index];
    const Time wire = port.wire_time(frame);
    port.busy_until = start + wire;
    port.busy_time += wire;
    PriorityCounters& c = port.counters[priority];
    ++c.tx_packets;
    c.tx_bytes += frame;
    schedule(start + wire + port.delay, port.peer,
             make_kind(kPacketArrival, port.peer_port) | kPrefetchPayload,
             reinterpret_cast<uint64_t>(p) | (marked ? kArrivalMarked : 0));
  }

  // The pool of the context the node runs in (its partition's, or the lane's of a thread that
  // took its burst: Simulator::set_lane_local); the one it was built with where the run sets
  // none.
  PacketPool& pool() {
    void* local = partition_local();
    return local != nullptr ? *static_cast<PacketPool*>(local) : pool_;
  }

  PacketPool& pool_;
  std::vector<EgressPort> ports_;

 private:
  void send_pause(uint32_t port, PauseSenders& senders, int priority, bool xoff);
  void hold_pause(uint32_t port, int priority);
  void release_pause(uint32_t port, int priority);

  void arm_watchdog(uint32_t port);

  PauseHandlers pause_handlers_;
  PfcWatchdogConfig watchdog_{};
  uint8_t watchdog_lossless_ = 0;
  // Per port: whether its poll timer runs, and when an XOFF last arrived for each priority.
  struct WatchdogPort {
    bool polling = false;
    std::array<Time, kPriorities> last_xoff{};
  };
  std::vector<WatchdogPort> watchdog_ports_;
  // Per port, bit p: a pause of priority p received there is in force and holds the run open
  // (hold_work) until an XON or its expiry ends it. Empty until the first pause.
  std::vector<uint8_t> pause_holds_;
};

}  // namespace fabtwin
