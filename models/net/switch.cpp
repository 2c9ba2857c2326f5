#include "models/net/switch.h"

#include "models/net/pfc.h"

namespace fabtwin {

using namespace switch_handler;

Switch::Switch(std::string name, PacketPool& pool, ForwardingTable forwarding, int node,
               const SwitchConfig& config)
    : NetworkNode(std::move(name), pool, {kPauseExpired, kPauseRefresh, kWatchdog}),
      forwarding_(std::move(forwarding)),
      config_(config) {
  ecmp_salt_ = static_cast<uint32_t>(mix64(static_cast<uint64_t>(node), 0xEC3B));
}

void Switch::begin() {
  std::vector<int64_t> headroom(ports_.size());
  for (size_t i = 0; i < ports_.size(); ++i) {
    EgressPort& port = ports_[i];
    headroom[i] = config_.port_headroom(port.rate, port.delay);
    port.scheduler = &config_.scheduler;
    port.ecn = config_.ecn;
    port.red = config_.red_for(port.rate);
  }
  buffer_ = std::make_unique<SharedBuffer>(config_.mmu, std::move(headroom));
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    pause_senders_.emplace_back(config_.pause_quanta, refresh_interval(i),
                                pfc::pause_duration(config_.pause_quanta, ports_[i].rate));
  }
  uint8_t lossless = 0;
  for (int p = 0; p < kPriorities; ++p) {
    if (config_.mmu.lossless[p]) lossless |= static_cast<uint8_t>(1u << p);
  }
  set_watchdog(config_.watchdog, lossless);
  if (config_.queue_sample_interval.ps > 0) {
    schedule_self(now() + config_.queue_sample_interval, kSample, 0);
  }
}

int64_t Switch::headroom_overflows() const {
  int64_t n = 0;
  for (const EgressPort& port : ports_) {
    for (const PriorityCounters& c : port.counters) n += c.drops_headroom;
  }
  return n;
}

void Switch::on_arrival(uint32_t in_port, Packet* p) {
  if (p->type == PacketType::Pause) {
    if (config_.pfc) receive_pause(in_port, *p);  // PFC off: pause frames are ignored
    pool_.release(p);
    return;
  }
  const int prio = config_.dscp_to_priority[p->dscp];  // trust DSCP
  p->priority = static_cast<uint8_t>(prio);
  const auto hops = forwarding_.next_hops(static_cast<int>(p->dst_host));
  const uint32_t out =
      hops.size() == 1 ? hops[0] : hops[ecmp_pick(p->ecmp_hash, ecmp_salt_, hops.size())];
  EgressPort& port = ports_[out];
  if (port.watchdog_drop >> prio & 1) [[unlikely]] {  // the PFC watchdog drops this queue
    watchdog_discard(port, prio, p, p->frame);
    return;
  }
  const Admission verdict =
      buffer_->admit(static_cast<int>(in_port), prio, static_cast<int>(out), prio, p->frame);
  if (verdict != Admission::Admitted) {
    const bool headroom = verdict == Admission::HeadroomOverflow;
    PriorityCounters& c = (headroom ? ports_[in_port] : port).counters[prio];
    ++c.drops;
    c.drop_bytes += p->frame;
    ++(headroom ? c.drops_headroom : c.drops_egress);
    pool_.release(p);
    return;
  }
  if (config_.mmu.lossless[prio]) {
    PauseSender& sender = pause_senders_[in_port];
    if (!sender.pausing(prio)) {
      if (buffer_->should_pause(static_cast<int>(in_port), prio)) {
        pause_upstream(in_port, sender, prio);
      }
    } else if (sender.lapsed(prio, now()) &&
               buffer_->should_pause(static_cast<int>(in_port), prio)) {
      lapse_resend(in_port, sender, prio);  // the last XOFF ran out: the peer sends again
    }
  }
  if (config_.mark_at_enqueue) maybe_mark(port, prio, p, port.queues[prio].bytes());
  port.enqueue(p, static_cast<uint16_t>(in_port));
  if (port_free(out)) {
    start_transmission(out);
  } else {
    request_transmit_done(out);
  }
}

void Switch::on_transmit_done(uint32_t port) {
  start_transmission(port);
}

void Switch::maybe_mark(EgressPort& port, int priority, Packet* p, int64_t queue_bytes) {
  if (!port.ecn || !port.red.should_mark(queue_bytes, rng())) return;
  if (p->ecn == Ecn::NotEct) return;  // only ECN-capable transport is marked
  p->ecn = Ecn::Ce;
  ++port.counters[priority].ecn_marks;
}

void Switch::start_transmission(uint32_t port_index) {
  EgressPort& port = ports_[port_index];
  if (!port_free(port_index)) {  // a same-time arrival took the wire first
    if (port.has_backlog() || !port.pending_pause.empty()) request_transmit_done(port_index);
    return;
  }
  if (transmit_pending_pause(port_index)) {  // MAC control frames go before any queue
    if (port.has_backlog() || !port.pending_pause.empty()) request_transmit_done(port_index);
    return;
  }
  const int prio = port.select(now());
  if (prio < 0) return;  // empty, or everything waiting is paused (the expiry or XON restarts it)
  const QueuedPacket q = port.dequeue(prio);
  port.charge(prio, q.frame);
  if (!config_.mark_at_enqueue) maybe_mark(port, prio, q.packet, port.queues[prio].bytes());
  buffer_->release(q.ingress, prio, static_cast<int>(port_index), prio, q.frame);
  if (pause_senders_[q.ingress].pausing(prio) && buffer_->should_resume(q.ingress, prio)) {
    resume_upstream(q.ingress, pause_senders_[q.ingress], prio);
  }
  transmit(port_index, q.packet, q.frame, prio);
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
    buffer_->release(q.ingress, prio, static_cast<int>(port_index), prio, q.frame);
    watchdog_discard(port, prio, q.packet, q.frame);
    if (pause_senders_[q.ingress].pausing(prio) && buffer_->should_resume(q.ingress, prio)) {
      resume_upstream(q.ingress, pause_senders_[q.ingress], prio);
    }
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
      refresh_pauses(index, pause_senders_[index], [&](int prio) {
        return buffer_->should_resume(static_cast<int>(index), prio);
      });
      break;
    case kWatchdog:
      watchdog_poll(index);
      break;
    case kSample:
      sample_events_.emplace_back(order_of(e), samples_.size(), buffer_samples_.size());
      for (uint32_t i = 0; i < ports_.size(); ++i) {
        samples_.push_back({now(), i, ports_[i].queued_bytes()});
      }
      buffer_samples_.push_back({now(), buffer_->used()});
      schedule_self(now() + config_.queue_sample_interval, kSample, 0);
      break;
    default:
      break;
  }
}

}  // namespace fabtwin
