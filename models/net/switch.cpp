#include "models/net/switch.h"

#include "models/net/pfc.h"

namespace fabtwin {

using namespace switch_handler;

namespace {
// Whether a table needs the checked path: per-priority entries, rewrites or a missing route.
bool needs_checks(const ForwardingTable& t) {
  return t.has_priority_routes() || !t.rewrites.empty() || t.has_missing_route();
}
}  // namespace

Switch::Switch(std::string name, PacketPool& pool, ForwardingTable forwarding, int node,
               const SwitchConfig& config)
    : NetworkNode(std::move(name), pool, {kPauseExpired, kPauseRefresh, kWatchdog}),
      forwarding_(std::move(forwarding)),
      config_(config) {
  ecmp_salt_ = ecmp_salt(node);
  checked_ = needs_checks(forwarding_);
  rewrites_ = !forwarding_.rewrites.empty();
  pipelined_ = config_.cut_through || config_.port_to_port_latency.ps > 0;
  for (int dscp = 63; dscp >= 0; --dscp) {
    priority_dscp_[config_.dscp_to_priority[dscp]] = static_cast<uint8_t>(dscp);
  }
}

void Switch::set_routing_strategies(const AdaptiveConfig& config,
                                    const std::array<RoutingStrategy, kPriorities>& strategies) {
  router_ = std::make_unique<AdaptiveRouter>(config, strategies, ecmp_salt_);
  bool any = false;
  for (int p = 0; p < kPriorities; ++p) any |= router_->routes(p);
  if (!any) {
    router_.reset();
    return;
  }
  checked_ = true;
}

void Switch::add_link_change(Time at, uint32_t port, bool up) {
  links_change_ = checked_ = true;
  link_changes_.emplace_back(at, port, up);
}

void Switch::add_route_update(Time at, ForwardingTable table) {
  checked_ = checked_ || needs_checks(table);
  rewrites_ = rewrites_ || !table.rewrites.empty();
  route_updates_.emplace_back(at, std::move(table));
}

void Switch::begin() {
  std::vector<int64_t> headroom(ports_.size());
  for (size_t i = 0; i < ports_.size(); ++i) {
    EgressPort& port = ports_[i];
    headroom[i] = config_.port_headroom(port.rate, port.delay);
    port.scheduler = &config_.scheduler;
    port.set_marking(config_.ecn, config_.red_for(port.rate));
  }
  buffer_ = std::make_unique<SharedBuffer>(config_.mmu, std::move(headroom), rewrites_);
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    pause_senders_.add(config_.pause_quanta, refresh_interval(i),
                       pfc::pause_duration(config_.pause_quanta, ports_[i].rate));
  }
  uint8_t lossless = 0;
  for (int p = 0; p < kPriorities; ++p) {
    if (config_.mmu.lossless[p]) lossless |= static_cast<uint8_t>(1u << p);
  }
  set_watchdog(config_.watchdog, lossless);
  if (router_) router_->begin(ports_.size(), forwarding_.port_slots());
  if (config_.queue_sample_interval.ps > 0) {
    schedule_self(now() + config_.queue_sample_interval, kSample, 0);
  }
  if (links_change_) {
    link_down_.assign(ports_.size(), 0);
    last_change_.assign(ports_.size(), Time{-1});
  }
  for (const auto& [at, port, up] : link_changes_) {
    schedule_self(at, make_kind(kLinkState, port), up ? 1 : 0);
  }
  for (size_t i = 0; i < route_updates_.size(); ++i) {
    schedule_self(route_updates_[i].first, kRouteUpdate, i);
  }
}

void Switch::drop(PriorityCounters& c, int64_t PriorityCounters::*cause, Packet* p) {
  ++c.drops;
  c.drop_bytes += p->frame;
  ++(c.*cause);
  pool().release(p);
}

// A frame that was on the link of `port` when it failed or recovered, or arrives while it is
// down, is lost (counted here, at the receiving end; the sender may have sent it onto the down
// link). PFC frames are lost uncounted.
bool Switch::lost_in_flight(uint32_t port, Packet* p) {
  const Time sent = now() - ports_[port].delay - ports_[port].wire_time(p->frame);
  if (!link_down_[port] && last_change_[port] <= sent) return false;
  if (p->type == PacketType::Pause) {
    pool().release(p);
  } else {
    drop(ports_[port].counters[p->priority], &PriorityCounters::drops_link_down, p);
  }
  return true;
}

// The link of `port` fails (its queued frames are lost and its PFC state is cleared: the
// peer's pauses of this egress end, and this port stops pausing the peer) or recovers.
void Switch::set_link(uint32_t index, bool up) {
  EgressPort& port = ports_[index];
  if (up != static_cast<bool>(link_down_[index])) return;  // no change
  link_down_[index] = up ? 0 : 1;
  last_change_[index] = now();
  if (up) return;
  for (int prio = 0; prio < kPriorities; ++prio) {
    if (pause_senders_.pausing(index, prio)) pause_senders_.stop(index, prio);
    port.close_pause(prio, now());
    port.queues[prio].paused_until = port.queues[prio].paused_since = now();
  }
  port.drop_pauses();
  port.watchdog_storm = port.watchdog_drop = 0;  // a storm ends with the link
  for (int prio = 0; prio < kPriorities; ++prio) {
    while (!port.queues[prio].empty()) {
      const QueuedPacket q = port.dequeue(prio);
      drop(port.counters[prio], &PriorityCounters::drops_link_down, q.packet);
      release(q, index, rewrites_ ? q.ingress_priority : prio, prio);
    }
  }
}

int64_t Switch::headroom_overflows() const {
  int64_t n = 0;
  for (const EgressPort& port : ports_) {
    for (const PriorityCounters& c : port.counters) n += c.drops_headroom;
  }
  return n;
}

// Admits a frame that arrived on `in_port` with priority `prio` to egress `out`, queue `queue`.
[[gnu::always_inline]] inline void Switch::forward(uint32_t in_port, Packet* p, int prio,
                                                   uint32_t out, int queue) {
  EgressPort& port = ports_[out];
  if (port.watchdog_drop >> queue & 1) [[unlikely]] {  // the PFC watchdog drops this queue
    watchdog_discard(port, queue, p, p->frame);
    return;
  }
  const Admission verdict =
      buffer_->admit(static_cast<int>(in_port), prio, static_cast<int>(out), queue, p->frame);
  if (verdict != Admission::Admitted) {
    const bool headroom = verdict == Admission::HeadroomOverflow;
    PriorityCounters& c = headroom ? ports_[in_port].counters[prio] : port.counters[queue];
    ++c.drops;
    c.drop_bytes += p->frame;
    ++(headroom ? c.drops_headroom : c.drops_egress);
    pool().release(p);
    return;
  }
  if (config_.mmu.lossless[prio]) {
    if (!pause_senders_.pausing(in_port, prio)) {
      if (buffer_->should_pause(static_cast<int>(in_port), prio)) {
        pause_upstream(in_port, pause_senders_, prio);
      }
    } else if (pause_senders_.lapsed(in_port, prio, now()) &&
               buffer_->should_pause(static_cast<int>(in_port), prio)) {
      lapse_resend(in_port, pause_senders_, prio);  // the last XOFF ran out: the peer sends again
    }
  }
  if (pipelined_) [[unlikely]] {
    enter_pipeline(in_port, p, prio, out, queue);
    return;
  }
  egress(in_port, p, prio, out, queue);
}

// An admitted frame goes to its egress: straight onto an idle wire, else into its queue.
[[gnu::always_inline]] inline void Switch::egress(uint32_t in_port, Packet* p, int prio,
                                                  uint32_t out, int queue) {
  EgressPort& port = ports_[out];
  if (config_.mark_at_enqueue) maybe_mark(port, queue, p, port.queues[queue].bytes(), is_ect(p));
  if (egress_idle(out, queue)) {
    pass_through(in_port, p, prio, out, queue, now());
    return;
  }
  port.enqueue(p, static_cast<uint16_t>(in_port), static_cast<uint8_t>(prio));
  if (port_free(out)) {
    start_transmission(out);
  } else {
    request_transmit_done(out);
  }
}

// The pipeline of an admitted frame (its bytes stay charged to the buffer until it starts).
// Store and forward: it goes to its egress port_to_port_latency after its last bit arrived.
// Cut-through, from an ingress link at least as fast as the egress: it starts at its head's
// arrival (one ingress wire time before its last bit's) plus the latency if its egress has
// been idle since then; its last bit then leaves no earlier than it arrived. An egress busy at
// that time makes it fall back to store and forward. Out of line: the default switch, store
// and forward with no latency, never comes here.
[[gnu::noinline]] void Switch::enter_pipeline(uint32_t in_port, Packet* p, int prio, uint32_t out,
                                              int queue) {
  const Time latency = config_.port_to_port_latency;
  const EgressPort& ingress = ports_[in_port];
  EgressPort& port = ports_[out];
  PipelineSlot slot{p,
                    now(),
                    out,
                    static_cast<uint16_t>(in_port),
                    static_cast<uint8_t>(prio),
                    static_cast<uint8_t>(queue),
                    false};
  if (config_.cut_through && ingress.rate.bps >= port.rate.bps) {
    const Time start = now() - ingress.wire_time(p->frame) + latency;
    if (start > now()) {
      slot.cut_through = true;
      wait_in_pipeline(start, slot);
      return;
    }
    // Idle since `start`: nothing sent since then, nothing queued, and no pause of its queue
    // in force at or after it.
    if (port.backlog == 0 && port.busy_until <= start && !port.pause_waiting() &&
        port.queues[queue].paused_until <= start) {
      if (config_.mark_at_enqueue) maybe_mark(port, queue, p, 0, is_ect(p));
      pass_through(in_port, p, prio, out, queue, start);
      return;
    }
  }
  if (latency.ps == 0) {
    egress(in_port, p, prio, out, queue);
    return;
  }
  wait_in_pipeline(now() + latency, slot);
}

void Switch::wait_in_pipeline(Time until, const PipelineSlot& slot) {
  uint32_t index;
  if (free_slots_.empty()) {
    index = static_cast<uint32_t>(pipeline_.size());
    pipeline_.push_back(slot);
  } else {
    index = free_slots_.back();
    free_slots_.pop_back();
    pipeline_[index] = slot;
  }
  schedule_self(until, kPipelineDone, index);
}

// A frame's time in the pipeline is over. Waiting to cut through, it starts now if its egress
// is idle, and otherwise waits until store and forward lets it go. A frame whose egress link
// went down, or whose queue the PFC watchdog now drops, is discarded.
void Switch::leave_pipeline(uint32_t index) {
  PipelineSlot& slot = pipeline_[index];
  EgressPort& port = ports_[slot.out];
  const bool down = links_change_ && link_down_[slot.out];
  if (slot.cut_through && !down) {
    slot.cut_through = false;
    if (!egress_idle(slot.out, slot.queue)) {
      schedule_self(slot.arrived + config_.port_to_port_latency, kPipelineDone, index);
      return;
    }
  }
  const PipelineSlot f = slot;
  free_slots_.push_back(index);
  if (down || (port.watchdog_drop >> f.queue & 1)) {
    const int frame = f.packet->frame;
    if (down) {
      drop(port.counters[f.queue], &PriorityCounters::drops_link_down, f.packet);
    } else {
      watchdog_discard(port, f.queue, f.packet, frame);
    }
    release({f.packet, frame, f.in_port, f.group, is_ect(f.packet)}, f.out, f.group, f.queue);
    return;
  }
  egress(f.in_port, f.packet, f.group, f.out, f.queue);
}

// A frame for an idle egress (free wire, every queue empty, no PFC frame waiting, its queue not
// paused) goes onto the wire at `start` (now, or earlier when cut through), with every effect that
// enqueue() followed by start_transmission() would have: the queue's high-water mark, the
// scheduler's deficit (an alone DWRR queue starts from nothing, a strict one is charged), marking
// on a queue left empty, the buffer's release, and the transmission. The frame is not copied into
// the queue and out.
[[gnu::always_inline]] inline void Switch::pass_through(uint32_t in_port, Packet* p, int prio,
                                                        uint32_t out, int queue, Time start) {
  EgressPort& port = ports_[out];
  const int frame = p->frame;
  PriorityCounters& c = port.counters[queue];
  if (frame > c.max_queue_bytes) c.max_queue_bytes = frame;
  if (port.scheduler != nullptr && !(port.scheduler->strict_mask >> queue & 1)) {
    port.queues[queue].deficit = 0;
  } else {
    port.queues[queue].deficit -= frame;
  }
  if (!config_.mark_at_enqueue) maybe_mark(port, queue, p, 0, is_ect(p));
  release({p, frame, static_cast<uint16_t>(in_port), static_cast<uint8_t>(prio), is_ect(p)}, out,
          prio, queue);
  transmit_from(start, out, p, frame, queue);
}

void Switch::on_arrival(uint32_t in_port, Packet* p) {
  if (checked_) {
    on_arrival_checked(in_port, p);
    return;
  }
  if (p->type == PacketType::Pause) {
    if (config_.pfc) receive_pause(in_port, *p);  // PFC off: pause frames are ignored
    pool().release(p);
    return;
  }
  const int prio = config_.dscp_to_priority[p->dscp];  // trust DSCP
  set_priority(p, prio);
  const auto hops = forwarding_.next_hops(static_cast<int>(p->dst_host));
  const uint32_t out =
      hops.size() == 1 ? hops[0] : hops[ecmp_pick(p->ecmp_hash, ecmp_salt_, hops.size())];
  forward(in_port, p, prio, out, prio);
}

// The same with everything a plain fabric cannot meet: link state, TTL, per-priority routes, a
// missing route, a priority rewrite.
void Switch::on_arrival_checked(uint32_t in_port, Packet* p) {
  if (links_change_ && lost_in_flight(in_port, p)) return;
  if (p->type == PacketType::Pause) {
    if (config_.pfc) receive_pause(in_port, *p);
    pool().release(p);
    return;
  }
  const int prio = config_.dscp_to_priority[p->dscp];
  set_priority(p, prio);
  if (--p->ttl <= ttl_floor_) {
    drop(ports_[in_port].counters[prio], &PriorityCounters::drops_ttl, p);
    return;
  }
  const auto hops = forwarding_.next_hops(static_cast<int>(p->dst_host), prio);
  // The egress queue: the arrival priority, unless this hop rewrites it (the frame then
  // carries a DSCP of the new priority, which the next hop classifies it by).
  const int queue = forwarding_.rewrite(static_cast<int>(in_port), prio);
  uint32_t out;
  if (hops.size() == 1) {
    out = hops[0];
  } else if (hops.empty()) {
    drop(ports_[in_port].counters[prio], &PriorityCounters::drops_unroutable, p);
    return;
  } else if (router_ && router_->routes(prio)) {
    // Adaptive strategies skip down and paused ports themselves: no wait for new routes.
    out = router_->pick(hops, forwarding_.offset_of(hops), p->ecmp_hash, prio, queue, now(), ports_,
                        links_change_ ? link_down_.data() : nullptr, rng());
  } else {
    out = hops[ecmp_pick(p->ecmp_hash, ecmp_salt_, static_cast<uint32_t>(hops.size()))];
  }
  if (links_change_ && link_down_[out]) {  // routes not yet recomputed after a failure
    drop(ports_[out].counters[prio], &PriorityCounters::drops_link_down, p);
    return;
  }
  if (queue != prio) {
    p->priority = static_cast<uint8_t>(queue);
    p->dscp = priority_dscp_[queue];
  }
  forward(in_port, p, prio, out, queue);
}

[[gnu::always_inline]] inline void Switch::release(const QueuedPacket& q, uint32_t port_index,
                                                   int group, int prio) {
  buffer_->release(q.ingress, group, static_cast<int>(port_index), prio, q.frame);
  if (pause_senders_.pausing(q.ingress, group) && buffer_->should_resume(q.ingress, group)) {
    resume_upstream(q.ingress, pause_senders_, group);
  }
}

void Switch::on_transmit_done(uint32_t port) {
  start_transmission(port);
}

// Inlined into the arrival and transmit-done paths that call it for every frame.
[[gnu::always_inline]] inline void Switch::start_transmission(uint32_t port_index) {
  EgressPort& port = ports_[port_index];
  if (!port_free(port_index)) {  // a same-time arrival took the wire first
    if (port.has_backlog() || port.pause_waiting()) request_transmit_done(port_index);
    return;
  }
  if (transmit_pending_pause(port_index)) {  // MAC control frames go before any queue
    if (port.has_backlog() || port.pause_waiting()) request_transmit_done(port_index);
    return;
  }
  const int prio = port.select(now());
  if (prio < 0) return;  // empty, or everything waiting is paused (the expiry or XON restarts it)
  // The frame leaves its ingress group: the arrival priority, which is the queue's unless this
  // switch rewrites priorities.
  if (rewrites_) [[unlikely]] {
    dequeue(port_index, prio, port.queues[prio].front().ingress_priority);
  } else {
    dequeue(port_index, prio, prio);
  }
}

// Sends the head of queue `prio` of `port_index`, whose frame came from ingress group `group`.
[[gnu::always_inline]] inline void Switch::dequeue(uint32_t port_index, int prio, int group) {
  EgressPort& port = ports_[port_index];
  const QueuedPacket q = port.dequeue(prio);
  port.charge(prio, q.frame);
  // RED at dequeue decides from the queue entry alone; the mark goes with the arrival event.
  const int64_t rest = port.queues[prio].bytes();
  const bool marked =
      !config_.mark_at_enqueue && port.may_mark(rest) && marks_above_kmin(port, prio, rest, q.ect);
  release(q, port_index, group, prio);
  transmit(port_index, q.packet, q.frame, prio, marked);
  if (port.has_backlog()) request_transmit_done(port_index);
}

void Switch::discard_background_after(unsigned __int128 stop) {
  while (!sample_events_.empty() && std::get<0>(sample_events_.back()) > stop) {
    samples_.resize(std::get<1>(sample_events_.back()));
    buffer_samples_.resize(std::get<2>(sample_events_.back()));
    sample_events_.pop_back();
  }
}

// The drop action: the frames queued are discarded (their buffer freed, which may resume the
// ingress groups they held).
void Switch::watchdog_flush(uint32_t port_index, int prio) {
  EgressPort& port = ports_[port_index];
  while (!port.queues[prio].empty()) {
    const QueuedPacket q = port.dequeue(prio);
    watchdog_discard(port, prio, q.packet, q.frame);
    // Its bytes leave the ingress group it arrived in (another priority where this switch
    // rewrites priorities), which may then resume upstream.
    release(q, port_index, rewrites_ ? q.ingress_priority : prio, prio);
  }
}

Time Switch::refresh_interval(uint32_t port) const {
  if (!config_.auto_refresh) return config_.pause_refresh;
  return pfc::half_pause_duration(config_.pause_quanta, ports_[port].rate);
}

void Switch::on_timer(const Event& e) {
  const uint32_t index = kind_index(e.kind);
  switch (kind_handler(e.kind)) {
    case kPauseExpired:
      pause_expired(index, static_cast<int>(e.data));
      break;
    case kPauseRefresh:
      refresh_pauses(index, pause_senders_, [&](int prio) {
        return buffer_->should_resume(static_cast<int>(index), prio);
      });
      break;
    case kLinkState:
      set_link(index, e.data != 0);
      break;
    case kPipelineDone:
      leave_pipeline(static_cast<uint32_t>(e.data));
      break;
    case kRouteUpdate:
      forwarding_ = route_updates_[e.data].second;
      if (router_) router_->on_table(forwarding_.port_slots());
      break;
    case kWatchdog:
      watchdog_poll(index);
      break;
    case kSample:
      sample_events_.emplace_back(order_of(e), samples_.size(), buffer_samples_.size());
      for (uint32_t i = 0; i < ports_.size(); ++i) {
        // Busy time up to now: the frame on the wire counts for what it has sent so far.
        const EgressPort& port = ports_[i];
        const Time ahead = port.busy_until > now() ? port.busy_until - now() : Time{};
        samples_.push_back({now(), i, port.queued_bytes(), port.busy_time - ahead});
      }
      buffer_samples_.push_back({now(), buffer_->used()});
      schedule_self(now() + config_.queue_sample_interval, kSample, 0);
      break;
    default:
      break;
  }
}

}  // namespace fabtwin
