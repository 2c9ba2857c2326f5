#include "models/switch.h"

namespace fabtwin {

namespace {
const ParamGroup kSwitchParams{
    "fabric.switch",
    "switch",
    "Switch buffer",
    {
        {"buffer", ParamType::Bytes, "\"32MB\"",
         "shared packet buffer of each switch; a frame that does not fit is dropped (tail drop)",
         "typical of 100GbE data-centre switch ASICs (16-64 MB)"},
    }};
}  // namespace

const ParamGroup& Switch::params() { return kSwitchParams; }

SwitchConfig Switch::read_config(const nlohmann::json& scenario) {
  const nlohmann::json none;
  const nlohmann::json& fabric = scenario.contains("fabric") ? scenario["fabric"] : none;
  const nlohmann::json& section =
      fabric.is_object() && fabric.contains("switch") ? fabric["switch"] : none;
  ParamReader r(section, "fabric.switch", kSwitchParams);
  SwitchConfig c;
  c.buffer = r.bytes("buffer");
  if (c.buffer.count < 2 * roce::kMinFrameBytes) {
    throw ScenarioError(r.path_of("buffer"), "expected room for at least two frames, found " +
                                                 format_bytes(c.buffer));
  }
  r.finish();
  return c;
}

Switch::Switch(std::string name, PacketPool& pool, const RoutingTable& routing, int node,
               const SwitchConfig& config)
    : NetworkNode(std::move(name), pool), routing_(routing), node_(node), config_(config) {
  ecmp_salt_ = static_cast<uint32_t>(mix64(static_cast<uint64_t>(node), 0xEC3B));
}

void Switch::begin() {
  if (config_.queue_sample_interval.ps > 0) {
    schedule_self(now() + config_.queue_sample_interval, kSampleQueues, 0);
  }
}

bool Switch::admit(const Packet& p) { return buffer_used_ + p.frame <= config_.buffer.count; }

void Switch::on_arrival(uint32_t in_port, Packet* p) {
  p->ingress_port = static_cast<uint16_t>(in_port);
  const auto hops = routing_.next_hops(node_, static_cast<int>(p->dst_host));
  const uint32_t out =
      hops.size() == 1 ? hops[0] : hops[ecmp_pick(p->ecmp_hash, ecmp_salt_, hops.size())];
  EgressPort& port = ports_[out];
  if (!admit(*p)) {
    PriorityCounters& c = port.counters[p->priority];
    ++c.drops;
    c.drop_bytes += p->frame;
    pool_.release(p);
    return;
  }
  buffer_used_ += p->frame;
  if (buffer_used_ > max_buffer_used_) max_buffer_used_ = buffer_used_;
  port.enqueue(p);
  if (port_free(out)) {
    start_transmission(out);
  } else {
    request_transmit_done(out);
  }
}

void Switch::on_transmit_done(uint32_t port) { start_transmission(port); }

void Switch::start_transmission(uint32_t port_index) {
  EgressPort& port = ports_[port_index];
  const int prio = port.next_priority();
  if (prio < 0) return;
  if (!port_free(port_index)) {  // a same-time arrival took the wire first
    request_transmit_done(port_index);
    return;
  }
  buffer_used_ -= port.queues[prio].front().frame;
  transmit_queued(port_index, prio);
  if (port.next_priority() >= 0) request_transmit_done(port_index);
}

void Switch::on_timer(const Event& e) {
  if (kind_handler(e.kind) != kSampleQueues) return;
  for (uint32_t i = 0; i < ports_.size(); ++i) {
    samples_.push_back({now(), i, ports_[i].queued_bytes()});
  }
  schedule_self(now() + config_.queue_sample_interval, kSampleQueues, 0);
}

}  // namespace fabtwin
