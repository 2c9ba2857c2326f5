#include "models/nic/host_nic.h"

#include <algorithm>
#include <limits>

#include "models/net/pfc.h"
#include "models/net/routing.h"

namespace fabtwin {

using namespace nic_handler;

namespace {
using NicParams = BoundParams<NicConfig>;

const NicParams kNicParams{
    "nic",
    "nic",
    "Host NIC and RC queue pairs",
    {
        NicParams::custom(
            {"mtu", ParamType::Bytes, "\"4096B\"",
             "payload bytes per packet (RoCE path MTU: 256B, 512B, 1024B, 2048B or 4096B on real "
             "NICs; any size is accepted for what-if studies)",
             "IB/RoCE active MTU 4096 with jumbo Ethernet frames"},
            [](ParamReader& r, NicConfig& c) {
              c.mtu = r.bytes("mtu");
              if (c.mtu.count < 1 || c.mtu.count > 9000) {
                throw ScenarioError(r.path_of("mtu"), "expected a payload of 1B to 9000B, found " +
                                                          format_bytes(c.mtu));
              }
            }),
        NicParams::field(&NicConfig::ack_every,
                         {"ack_every", ParamType::Integer, "1",
                          "the responder acknowledges every n-th in-order packet (and always the "
                          "last one)",
                          "fabtwin; one ACK per packet as in the HPCC ns-3 model", "1..65536"}),
        NicParams::custom(
            {"ack_dscp", ParamType::Text, "\"data\"",
             "DSCP of ACKs and NAKs: data (the queue pair's own DSCP, so they share the data's "
             "priority) or a DSCP 0..63 whose priority in fabric.qos.dscp_to_priority they then "
             "travel in (e.g. 48: priority 6, strict, as HPCC's ns-3 sends ACKs ahead of data)",
             "ConnectX sends ACKs on the queue pair's traffic class (data); HPCC ns-3 "
             "(docs/references.md, Peer simulators)",
             "data|0..63"},
            [](ParamReader& r, NicConfig& c) {
              const nlohmann::json v = r.json("ack_dscp");
              if (v.is_string() && v.get<std::string>() == "data") {
                c.ack_dscp = -1;
              } else if (v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 63) {
                c.ack_dscp = v.get<int>();
              } else {
                throw ScenarioError(r.path_of("ack_dscp"),
                                    "expected \"data\" or a DSCP 0..63, found " + json_text(v));
              }
            }),
        NicParams::custom(
            {"rx_drain_rate", ParamType::Text, "\"line\"",
             "rate at which the receiver takes packets off the wire into host memory; below the "
             "link rate (a PCIe or memory bottleneck) arrivals wait in the receive buffer and the "
             "NIC sends PFC pause for lossless priorities; \"line\" = never a bottleneck",
             "fabtwin; ConnectX NICs send PFC when their receive buffer fills"},
            [](ParamReader& r, NicConfig& c) {
              c.rx_drain_rate = r.rate_or("rx_drain_rate", "line").value_or(BitsPerSec{});
            }),
        NicParams::field(&NicConfig::rx_xoff,
                         {"rx_xoff", ParamType::Bytes, "\"64KB\"",
                          "receive-buffer occupancy at which the NIC pauses the lossless priority "
                          "upstream",
                          "fabtwin"}),
        NicParams::field(&NicConfig::rx_xon,
                         {"rx_xon", ParamType::Bytes, "\"32KB\"",
                          "receive-buffer occupancy at which the NIC resumes it (XON)", "fabtwin"}),
        NicParams::custom(
            {"rx_stall", ParamType::List, "{}",
             "fault injection: {\"hosts\": [2], \"start\": \"100us\", \"end\": \"2ms\"} "
             "stalls those hosts' NIC receive pipelines from start to end: arrivals wait in the "
             "receive buffer and lossless priorities are paused upstream (a PFC storm); after "
             "end the buffer drains at rx_drain_rate (line rate if \"line\")",
             "fabtwin; the stalled-receive-pipeline storm of Guo et al., SIGCOMM 2016"},
            [](ParamReader& r, NicConfig& c) {
              const nlohmann::json& v = r.raw("rx_stall");
              if (v.is_null()) return;
              const std::string path = r.path_of("rx_stall");
              if (!v.is_object() || !v.contains("hosts") || !v["hosts"].is_array()) {
                throw ScenarioError(path,
                                    "expected {\"hosts\": [...], \"start\": TIME, "
                                    "\"end\": TIME}, found " +
                                        json_text(v));
              }
              for (const auto& [key, value] : v.items()) {
                if (key != "hosts" && key != "start" && key != "end") {
                  throw ScenarioError(path + "." + key,
                                      "expected one of hosts, start, end, found " + key);
                }
              }
              for (size_t i = 0; i < v["hosts"].size(); ++i) {
                const nlohmann::json& h = v["hosts"][i];
                if (!h.is_number_integer() || h.get<int64_t>() < 0 ||
                    h.get<int64_t>() > std::numeric_limits<int>::max()) {
                  throw ScenarioError(path + ".hosts[" + std::to_string(i) + "]",
                                      "expected a host index, found " + json_text(h));
                }
                c.rx_stall_hosts.push_back(h.get<int>());
              }
              const auto time_at = [&](const char* key, const char* fallback) {
                const nlohmann::json t = v.contains(key) ? v[key] : nlohmann::json(fallback);
                try {
                  if (!t.is_string()) throw UnitError("expected a time like \"100us\"");
                  return parse_time(t.get<std::string>());
                } catch (const UnitError& e) {
                  throw ScenarioError(path + "." + key, e.what());
                }
              };
              c.rx_stall_start = time_at("start", "0us");
              c.rx_stall_end = v.contains("end") ? time_at("end", "0us") : Time::max();
              if (c.rx_stall_end <= c.rx_stall_start) {
                throw ScenarioError(path + ".end", "expected a time after start, found " +
                                                       format_time(c.rx_stall_end));
              }
            }),
        NicParams::custom({"receiver", ParamType::List, "{}",
                           "receiver mode and its knobs; see nic.receiver (fabtwin describe "
                           "receiver)",
                           "fabtwin"},
                          [](ParamReader& r, NicConfig& c) {
                            c.receiver = read_receiver_config(r.raw("receiver"));
                          }),
        NicParams::field(
            &NicConfig::qps_per_flow,
            {"qps_per_flow", ParamType::Integer, "1",
             "queue pairs per flow: a flow's data is split over this many QPs (in "
             "chunks of ceil(size / n) rounded up to 128 bytes, as "
             "NCCL_IB_SPLIT_DATA_ON_QPS splits a message), each with its own UDP "
             "source port and so its own ECMP hash; the flow completes when all "
             "are acknowledged",
             "fabtwin; NCCL's split of a message over the QPs of a connection", "1..256"}),
        NicParams::custom({"cc", ParamType::List, "{}",
                           "congestion control; see nic.cc (fabtwin describe cc)", "fabtwin"},
                          [](ParamReader& r, NicConfig&) { r.raw("cc"); }),  // read_cc_config
        NicParams::field(&NicConfig::receive_queue_depth,
                         {"receive_queue_depth", ParamType::Integer, "512",
                          "SEND: receive WQEs the application keeps posted on each queue pair "
                          "(one queue per source host at each destination); a SEND that finds "
                          "none is answered with an RNR NAK",
                          "perftest's default receive depth for SEND (DEF_RX_SEND 512, "
                          "docs/references.md §10.12)",
                          "1.."}),
        NicParams::field(&NicConfig::receive_repost_delay,
                         {"receive_repost_delay", ParamType::Time, "\"1us\"",
                          "SEND: time from a receive completion to the application posting that "
                          "WQE again (polling the completion queue and ibv_post_recv)",
                          "fabtwin; an application that reposts as it polls, as perftest's "
                          "server loop does"}),
        NicParams::field(&NicConfig::min_rnr_timer,
                         {"min_rnr_timer", ParamType::Time, "\"0.64ms\"",
                          "SEND: the responder's minimum RNR NAK timer; a requester that got an "
                          "RNR NAK waits this long before sending the SEND again",
                          "InfiniBand RNR timer encoding 12 = 0.64 ms, what perftest and NCCL set "
                          "(docs/references.md §10.12)"}),
        NicParams::field(
            &NicConfig::message_overhead,
            {"message_overhead", ParamType::Time, "\"0us\"",
             "per-message overhead of the sending NIC for flows: a flow's first packet leaves no "
             "earlier than its start plus this (doorbell ring, work-request fetch over PCIe); its "
             "FCT includes it. Collective messages are not flows: the proxy and PCIe latencies "
             "of nccl and gpu cover them. Measured NICs take roughly 0.3-1 us (the inverse of a "
             "single queue pair's small-message rate, e.g. 2.6 Mpps in perftest = 0.38 us)",
             "fabtwin: 0, the message's start is its first packet's; perftest MsgRate "
             "(docs/references.md §4.1, §11.1)"}),
        NicParams::field(&NicConfig::ack_timeout,
                         {"ack_timeout", ParamType::Time, "\"67.108864ms\"",
                          "requester retransmits go-back-N from the oldest unacknowledged packet "
                          "after this long without progress; at least the fabric's shortest "
                          "round trip",
                          "InfiniBand local ACK timeout 4.096us x 2^14 (perftest's default "
                          "exponent 14)"}),
    },
    [](ParamReader& r, const NicConfig& c) {
      if (c.rx_xon > c.rx_xoff) {
        throw ScenarioError(r.path_of("rx_xon"), "expected rx_xon <= rx_xoff, found " +
                                                     format_bytes(Bytes{c.rx_xon}) + " > " +
                                                     format_bytes(Bytes{c.rx_xoff}));
      }
      if (c.receive_repost_delay.ps < 0) {
        throw ScenarioError(
            r.path_of("receive_repost_delay"),
            "expected a time of 0 or more, found " + format_time(c.receive_repost_delay));
      }
      if (c.min_rnr_timer.ps < 0) {
        throw ScenarioError(r.path_of("min_rnr_timer"),
                            "expected a time of 0 or more, found " + format_time(c.min_rnr_timer));
      }
      if (c.ack_timeout.ps <= 0) {
        throw ScenarioError(r.path_of("ack_timeout"),
                            "expected a positive time, found " + format_time(c.ack_timeout));
      }
    }};
}  // namespace

const ParamGroup& HostNic::params() {
  return kNicParams.group();
}

NicConfig HostNic::read_config(const nlohmann::json& scenario) {
  return kNicParams.read(scenario.contains("nic") ? scenario["nic"] : nlohmann::json());
}

HostNic::HostNic(std::string name, PacketPool& pool, int host, const NicConfig& config)
    : NetworkNode(std::move(name), pool, {kPauseExpired, kRxPauseRefresh, kWatchdog}),
      host_(host),
      config_(config),
      notification_point_(config.cc.dcqcn.min_time_between_cnps, config.cc.dcqcn.cnp_dscp,
                          config.dscp_to_priority[static_cast<uint8_t>(config.cc.dcqcn.cnp_dscp)],
                          config.cc.dcqcn.cnp_delay) {}

int64_t part_bytes(int64_t size, int parts, int part) {
  const int64_t chunk = ((size + parts - 1) / parts + 127) / 128 * 128;
  return std::clamp<int64_t>(size - chunk * part, 0, chunk);
}

uint32_t HostNic::add_send_qp(const FlowSpec& flow) {
  const int parts = config_.qps_per_flow;
  const uint32_t first = static_cast<uint32_t>(send_qps_.size());
  for (int i = 0; i < parts; ++i) {
    FlowSpec part = flow;
    part.size = Bytes{parts == 1 ? flow.size.count : part_bytes(flow.size.count, parts, i)};
    RequesterQp& qp = send_qps_[new_send_qp(part)];
    qp.first_part = first;
    qp.parts_left = static_cast<uint32_t>(parts);
    qp.record.spec = flow;
  }
  return first;
}

uint32_t HostNic::new_send_qp(const FlowSpec& flow) {
  RequesterQp qp;
  qp.flow = flow;
  qp.packets = packets_of(flow.size.count, config_.mtu.count);
  // RoCE NICs derive the UDP source port from the QP; it is what gives ECMP its entropy.
  const auto udp_source_port = static_cast<uint16_t>(49152 + rng().below(16384));
  qp.hash = roce_flow_hash(static_cast<uint32_t>(flow.src), static_cast<uint32_t>(flow.dst),
                           udp_source_port);
  qp.rate = ports_.at(0).rate;
  qp.line_rate = qp.rate;
  qp.cc = make_congestion_control(config_.cc, qp.rate, config_.mtu);
  qp.priority = config_.dscp_to_priority[flow.dscp];
  qp.record.spec = flow;
  qp.mode = config_.receiver.mode;
  if (qp.selective()) {
    qp.sacked.reset(static_cast<uint32_t>(config_.receiver.window));
    qp.bdp_cap = config_.receiver.bdp_cap;
    qp.bdp_auto = qp.bdp_cap == 0;
  }
  send_qps_.push_back(std::move(qp));
  return static_cast<uint32_t>(send_qps_.size() - 1);
}

uint32_t HostNic::add_receive_qp(const FlowSpec& flow, uint32_t sender_qp) {
  const int parts = config_.qps_per_flow;
  const uint32_t first = static_cast<uint32_t>(receive_qps_.size());
  for (int i = 0; i < parts; ++i) {
    FlowSpec part = flow;
    part.size = Bytes{parts == 1 ? flow.size.count : part_bytes(flow.size.count, parts, i)};
    new_receive_qp(part, sender_qp + static_cast<uint32_t>(i));
  }
  return first;
}

uint32_t HostNic::new_receive_qp(const FlowSpec& flow, uint32_t sender_qp) {
  ResponderQp rq;
  rq.flow = flow.id;
  rq.src = flow.src;
  rq.sender_qp = sender_qp;
  rq.packets = packets_of(flow.size.count, config_.mtu.count);
  const auto udp_source_port = static_cast<uint16_t>(49152 + rng().below(16384));
  rq.hash = roce_flow_hash(static_cast<uint32_t>(host_), static_cast<uint32_t>(flow.src),
                           udp_source_port);
  rq.dscp = flow.dscp;
  rq.priority = config_.dscp_to_priority[flow.dscp];
  rq.set_mode(config_.receiver.mode, config_.receiver.window);
  if (flow.verb == Verb::Send) {
    const auto at =
        std::lower_bound(queue_of_.begin(), queue_of_.end(), std::pair<int, int32_t>{flow.src, -1});
    if (at != queue_of_.end() && at->first == flow.src) {
      rq.receive_queue = at->second;
    } else {
      rq.receive_queue = static_cast<int32_t>(receive_queues_.size());
      receive_queues_.push_back(ReceiveQueue::full(config_.receive_queue_depth));
      queue_of_.insert(at, {flow.src, rq.receive_queue});
    }
  }
  receive_qps_.push_back(std::move(rq));
  return static_cast<uint32_t>(receive_qps_.size() - 1);
}

void HostNic::connect_send_qp(uint32_t qp, uint32_t receiver_qp) {
  const uint32_t parts = send_qps_[qp].connection ? 1 : send_qps_[qp].parts_left;
  for (uint32_t i = 0; i < parts; ++i) send_qps_[qp + i].receiver_qp = receiver_qp + i;
}

uint32_t HostNic::add_connection_send_qp(uint32_t connection, int dst, int dscp, uint32_t lane,
                                         uint32_t lanes) {
  const uint32_t qp = new_send_qp({connection, host_, dst, Bytes{0}, Time{}, dscp});
  RequesterQp& q = send_qps_[qp];
  q.connection = true;
  q.lane = lane;
  q.lanes = lanes;
  return qp;
}

uint32_t HostNic::add_connection_receive_qp(uint32_t connection, int src, int dscp,
                                            uint32_t sender_qp, uint32_t lane, uint32_t lanes) {
  const uint32_t rq = new_receive_qp({connection, src, host_, Bytes{0}, Time{}, dscp}, sender_qp);
  ResponderQp& r = receive_qps_[rq];
  r.connection = true;
  r.set_mode(config_.receiver.mode, config_.receiver.window);  // with its message-end map
  r.lane = lane;
  r.lanes = lanes;
  r.packets = UINT32_MAX;
  return rq;
}

void HostNic::post_message(uint32_t qp, int64_t bytes, bool immediate) {
  send_qps_[qp].post_message(bytes, config_.mtu.count, now(), timeout_of(send_qps_[qp]), immediate);
  activate(qp);
  pump();
}

void HostNic::notify_host(uint32_t kind, uint32_t connection, uint64_t sequence) {
  schedule(now() + config_.host_latency, host_component_, kind,
           static_cast<uint64_t>(connection) << 32 | sequence);
}

void HostNic::add_link_change(Time at, bool up) {
  links_change_ = true;
  link_changes_.emplace_back(at, up);
}

// The link fails (frames queued at the port are lost, and its PFC state is cleared) or
// recovers (the NIC sends again).
void HostNic::set_link(bool up) {
  EgressPort& port = ports_[0];
  if (up != link_down_) return;  // no change
  link_down_ = !up;
  last_change_ = now();
  if (up) {
    pump();
    return;
  }
  PauseSenders& sender = rx_buffer_.pause_sender();
  for (int prio = 0; prio < kPriorities; ++prio) {
    if (sender.pausing(0, prio)) sender.stop(0, prio);
    port.close_pause(prio, now());
    port.queues[prio].paused_until = port.queues[prio].paused_since = now();
    while (!port.queues[prio].empty()) {
      const QueuedPacket q = port.dequeue(prio);
      PriorityCounters& c = port.counters[prio];
      ++c.drops;
      c.drop_bytes += q.frame;
      ++c.drops_link_down;
      pool().release(q.packet);
    }
  }
  port.drop_pauses();
  port.watchdog_storm = port.watchdog_drop = 0;  // a storm ends with the link
}

void HostNic::begin() {
  // The receive buffer re-sends its XOFFs every fabric.pfc.refresh_interval, as switches do
  // (auto, or none given: half the pause time).
  const BitsPerSec rate = ports_.at(0).rate;
  const Time refresh = config_.auto_refresh || config_.pause_refresh.ps <= 0
                           ? pfc::half_pause_duration(config_.pause_quanta, rate)
                           : config_.pause_refresh;
  BitsPerSec drain = config_.rx_drain_rate;
  if (std::find(config_.rx_stall_hosts.begin(), config_.rx_stall_hosts.end(), host_) !=
      config_.rx_stall_hosts.end()) {
    rx_stall_start_ = config_.rx_stall_start;
    rx_stall_end_ = config_.rx_stall_end;
    if (drain.bps == 0) drain = rate;  // the buffer must hold what the stall keeps
  }
  PauseSenders sender;
  sender.add(config_.pause_quanta, refresh, pfc::pause_duration(config_.pause_quanta, rate));
  rx_buffer_ = ReceiveBuffer(drain, config_.rx_xoff, config_.rx_xon, config_.pfc, config_.lossless,
                             std::move(sender));
  uint8_t lossless = 0;
  for (int p = 0; p < kPriorities; ++p) {
    if (config_.pfc && config_.lossless[p]) lossless |= static_cast<uint8_t>(1u << p);
  }
  set_watchdog(config_.watchdog, lossless);
  start_order_.resize(send_qps_.size());
  for (uint32_t i = 0; i < send_qps_.size(); ++i) start_order_[i] = i;
  std::erase_if(start_order_, [&](uint32_t qp) { return send_qps_[qp].connection; });
  std::sort(start_order_.begin(), start_order_.end(), [&](uint32_t a, uint32_t b) {
    const FlowSpec &fa = send_qps_[a].flow, &fb = send_qps_[b].flow;
    return fa.start < fb.start || (fa.start == fb.start && fa.id < fb.id);
  });
  for (const uint32_t qp : start_order_) {  // released as flows complete
    if (send_qps_[qp].first_part == qp) hold_work();
  }
  if (config_.cc.algorithm != CcAlgorithm::None && config_.rate_sample_interval.ps > 0 &&
      !send_qps_.empty()) {
    schedule_self(now() + config_.rate_sample_interval, kRateSample, 0);
  }
  if (!start_order_.empty()) schedule_self(first_packet_at(start_order_[0]), kFlowStart, 0);
  for (const auto& [at, up] : link_changes_) schedule_self(at, kLinkState, up ? 1 : 0);
}

void HostNic::activate(uint32_t qp) {
  RequesterQp& q = send_qps_[qp];
  if (q.active || q.done) return;
  q.active = true;
  rotation_.push_back(qp);
}

void HostNic::leave_rotation(RequesterQp& qp, uint32_t index) {
  if (!qp.active) return;
  qp.active = false;
  rotation_.erase(std::find(rotation_.begin(), rotation_.end(), index));
}

void HostNic::on_timer(const Event& e) {
  switch (kind_handler(e.kind)) {
    case kFlowStart:
      while (next_start_ < start_order_.size() &&
             first_packet_at(start_order_[next_start_]) <= now()) {
        const uint32_t qp = start_order_[next_start_++];
        if (send_qps_[qp].packets == 0) {  // an empty message completes at once
          complete(send_qps_[qp]);
          continue;
        }
        send_qps_[qp].started = true;
        activate(qp);
      }
      if (next_start_ < start_order_.size()) {
        schedule_self(first_packet_at(start_order_[next_start_]), kFlowStart, 0);
      }
      pump();
      break;
    case kAckTimeout: {
      RequesterQp& qp = send_qps_[e.data];
      qp.timer_scheduled = false;
      if (qp.done || qp.all_acked()) break;  // nothing outstanding
      if (now() < qp.deadline) {
        arm_timer(qp);
        break;
      }
      qp.on_timeout();
      activate(static_cast<uint32_t>(e.data));
      qp.deadline = now() + timeout_of(qp);
      arm_timer(qp);
      pump();
      break;
    }
    case kHoleTimer: {
      ResponderQp& rq = receive_qps_[e.data];
      if (rq.on_hole_timer()) send_reply(PacketType::Nak, rq, now());
      if (rq.hole_timer) schedule_self(now() + config_.receiver.nak_delay, kHoleTimer, e.data);
      break;
    }
    case kReceiveRepost:
      receive_queues_[e.data].repost();
      break;
    case kPacingWake:
      wake_at_ = Time::max();
      pump();
      break;
    case kNicPostMessage:
      post_message(static_cast<uint32_t>(e.data >> 40),
                   static_cast<int64_t>(e.data & (kPostImmediate - 1)),
                   (e.data & kPostImmediate) != 0);
      break;
    case kRxDrained: {
      if (now() < rx_stall_end_ && now() >= rx_stall_start_) [[unlikely]] {
        schedule_self(rx_stall_end_, kRxDrained, 0);  // stalled: the head waits
        break;
      }
      Packet* p = rx_buffer_.pop();
      const int prio = p->priority;
      receive_data(p);
      if (!rx_buffer_.empty()) schedule_self(now() + rx_buffer_.head_drain_time(), kRxDrained, 0);
      if (rx_buffer_.should_resume(prio)) resume_upstream(0, rx_buffer_.pause_sender(), prio);
      break;
    }
    case kRxPauseRefresh:  // XON is sent as the buffer drains, never at a refresh
      refresh_pauses(0, rx_buffer_.pause_sender(), [](int) { return false; });
      break;
    case kCcTimer: {
      RequesterQp& qp = send_qps_[e.data];
      if (now() == qp.cc_timer_at) qp.cc_timer_at = Time::max();
      // A finished flow stops; an idle connection QP pauses its rate recovery until it sends
      // again (the next packet re-arms the timer), so that an idle fabric lets the run end.
      if (qp.done || (qp.connection && qp.all_acked())) break;
      if (now() >= qp.cc->next_timer()) {
        qp.cc->on_timer(now());
        qp.update_rate(now());
      }
      arm_cc_timer(qp);
      pump();
      break;
    }
    case kRateSample:
      sample_events_.emplace_back(order_of(e), rate_samples_.size());
      for (const RequesterQp& qp : send_qps_) {
        if (qp.started && !qp.done)
          rate_samples_.push_back({now(), qp.flow.id, qp.cc->state(now())});
      }
      schedule_self(now() + config_.rate_sample_interval, kRateSample, 0);
      break;
    case kPauseExpired:
      pause_expired(0, static_cast<int>(e.data));
      break;
    case kLinkState:
      set_link(e.data != 0);
      break;
    case kCnpDue:
      send_cnp(receive_qps_[e.data]);
      break;
    case kWatchdog:
      watchdog_poll(0);
      break;
    default:
      break;
  }
}

void HostNic::arm_timer(RequesterQp& qp) {
  if (qp.timer_scheduled) return;
  qp.timer_scheduled = true;
  schedule_self(qp.deadline, kAckTimeout, static_cast<uint64_t>(&qp - send_qps_.data()));
}

void HostNic::go_back_to(RequesterQp& qp, uint32_t psn) {
  qp.go_back_to(psn);
  activate(static_cast<uint32_t>(&qp - send_qps_.data()));
}

void HostNic::discard_background_after(unsigned __int128 stop) {
  while (!sample_events_.empty() && sample_events_.back().first > stop) {
    rate_samples_.resize(sample_events_.back().second);
    sample_events_.pop_back();
  }
}

bool HostNic::sends_waiting(int priority) const {
  for (const uint32_t qp : rotation_) {
    if (send_qps_[qp].priority == priority) return true;
  }
  return false;
}

void HostNic::on_transmit_done(uint32_t) {
  pump();
}

void HostNic::pump() {
  EgressPort& port = ports_[0];
  if (link_down_) {  // nothing crosses a down link
    port.drop_pauses();
    return;
  }
  if (!port_free(0)) {
    request_transmit_done(0);
    return;
  }
  if (transmit_pending_pause(0)) {  // MAC control frames go first
    request_transmit_done(0);
    return;
  }
  const int prio = port.select(now());
  if (prio >= 0) {  // responder ACKs/NAKs go ahead of new data
    const QueuedPacket q = port.dequeue(prio);
    send_frame(q.packet, q.frame, prio);
  } else if (!send_next_data_packet()) {
    return;
  }
  if (port.has_backlog() || !rotation_.empty()) request_transmit_done(0);
}

bool HostNic::send_next_data_packet() {
  if (dma_ready_ > now()) {  // the DMA engine is still reading the previous payload
    if (!rotation_.empty() && dma_ready_ < wake_at_) {
      wake_at_ = dma_ready_;
      schedule_self(dma_ready_, kPacingWake, 0);
    }
    return false;
  }
  Time earliest = Time::max();
  for (size_t tried = 0; tried < rotation_.size(); ++tried) {
    if (rotation_next_ >= rotation_.size()) rotation_next_ = 0;
    const uint32_t index = rotation_[rotation_next_];
    RequesterQp& qp = send_qps_[index];
    if (ports_[0].paused(qp.priority, now())) {  // PFC: the expiry or XON restarts it
      ++rotation_next_;
      continue;
    }
    if (const Time ready = std::max(qp.next_send, qp.rnr_until); ready > now()) {
      earliest = std::min(earliest, ready);
      ++rotation_next_;
      continue;
    }
    if (!qp.window_open(config_.mtu.count)) {  // the ACK that opens it pumps again
      qp.window_blocked = true;
      ++rotation_next_;
      continue;
    }
    Packet* p = pool().acquire();
    if (qp.selective()) [[unlikely]] {
      if (!write_selective(qp, *p, index)) {
        pool().release(p);
        qp.window_blocked = true;
        ++rotation_next_;
        continue;
      }
    } else {
      qp.write_next_packet(*p, index, host_, config_.mtu.count);
    }
    p->timestamp = now();
    qp.on_packet_sent(*p, now(), timeout_of(qp), ports_[0].rate);
    if (qp.cc) arm_cc_timer(qp);
    ++data_packets_sent_;
    if (config_.tx_dma_rate.bps > 0) {
      dma_ready_ = now() + serialization_delay(Bytes{p->payload}, config_.tx_dma_rate);
    }
    arm_timer(qp);
    if (qp.selective() ? !qp.sends_pending() : qp.all_sent()) {
      // everything sent; leaves the rotation until a rewind
      qp.active = false;
      rotation_.erase(rotation_.begin() + static_cast<std::ptrdiff_t>(rotation_next_));
    } else {
      ++rotation_next_;
    }
    send_frame(p, p->frame, p->priority);
    return true;
  }
  if (earliest != Time::max() && earliest < wake_at_) {
    wake_at_ = earliest;
    schedule_self(earliest, kPacingWake, 0);
  }
  return false;
}

// Selective repeat: fills `p` as the oldest hole of the recovery not yet resent, else as the next
// new packet if the BDP cap lets it go; false if neither.
bool HostNic::write_selective(RequesterQp& qp, Packet& p, uint32_t index) {
  const uint32_t hole = qp.recovery ? qp.next_hole() : RequesterQp::kNoHole;
  if (hole != RequesterQp::kNoHole) {
    qp.write_packet(p, hole, index, host_, config_.mtu.count);
    qp.resend_next = hole + 1;
    ++qp.record.packets_retransmitted;
    return true;
  }
  if (qp.all_sent() || !qp.cap_open(config_.mtu.count)) return false;
  qp.write_next_packet(p, index, host_, config_.mtu.count);
  return true;
}

// The PFC watchdog's drop action on the priority of frame `p`: discarded as it leaves the queue
// (the port stays busy for its wire time: the queue drains at line rate).
void HostNic::watchdog_drop_frame(Packet* p, int frame, int priority) {
  EgressPort& port = ports_[0];
  port.busy_until = now() + port.wire_time(frame);
  watchdog_discard(port, priority, p, frame);
}

// Frames waiting for `priority`: responses queued, or a send QP of that priority with a packet
// to send. (The drop action discards the queued responses, NetworkNode::watchdog_flush, and the
// send QPs' packets as they are sent, send_frame.)
bool HostNic::watchdog_backlog(uint32_t, int priority) const {
  if (!ports_[0].queues[priority].empty()) return true;
  for (const uint32_t qp : rotation_) {
    if (send_qps_[qp].priority == priority) return true;
  }
  return false;
}

void HostNic::on_arrival(uint32_t, Packet* p) {
  if (links_change_) {  // lost if the link is down, or went down or up while the frame was on it
    const Time sent = now() - ports_[0].delay - ports_[0].wire_time(p->frame);
    if (link_down_ || last_change_ > sent) {
      if (p->type != PacketType::Pause) {
        PriorityCounters& c = ports_[0].counters[p->priority];
        ++c.drops;
        c.drop_bytes += p->frame;
        ++c.drops_link_down;
      }
      pool().release(p);
      return;
    }
  }
  if (p->type == PacketType::Data && rx_buffer_.enabled()) {
    // A slow receiver: the packet waits its turn in the receive buffer (released when drained).
    if (rx_buffer_.push(p)) schedule_self(now() + rx_buffer_.head_drain_time(), kRxDrained, 0);
    const int prio = p->priority;
    if (rx_buffer_.should_pause(prio)) {
      pause_upstream(0, rx_buffer_.pause_sender(), prio);
    } else if (rx_buffer_.lapsed(prio, now())) {
      lapse_resend(0, rx_buffer_.pause_sender(), prio);  // the last XOFF ran out: re-send it
    }
    return;
  }
  switch (p->type) {
    case PacketType::Data:
      on_data(p);
      break;
    case PacketType::Ack:
      on_ack(*p);
      break;
    case PacketType::Nak:
      on_nak(*p);
      break;
    case PacketType::RnrNak:
      on_rnr_nak(*p);
      break;
    case PacketType::Cnp:
      on_cnp(*p);
      break;
    case PacketType::Sack:
      on_sack(*p);
      break;
    case PacketType::Pause:  // the NIC honours PFC
      receive_pause(0, *p);
      break;
    default:
      break;
  }
  pool().release(p);
}

void HostNic::receive_data(Packet* p) {
  on_data(p);
  pool().release(p);
}

void HostNic::on_data(Packet* p) {
  ResponderQp& rq = receive_qps_[p->receiver_qp];
  if (p->ecn == Ecn::Ce && config_.cc.notification_point() &&
      notification_point_.on_congestion_experienced(rq.congestion, now())) {
    if (notification_point_.delay().ps == 0) {
      send_cnp(rq);
    } else {
      schedule_self(now() + notification_point_.delay(), kCnpDue, p->receiver_qp);
    }
  }
  if (rq.receive_queue >= 0 && !rq.has_wqe) [[unlikely]] {
    if (!claim_receive_wqe(rq, *p)) return;
  }
  const ResponderQp::Response r = rq.on_data(*p, now(), config_.ack_every);
  if (rq.receive_queue >= 0 && !rq.received && rq.expected_psn == rq.packets) [[unlikely]] {
    // The receive completed: the application posts its WQE again after a while.
    rq.received = true;
    schedule_self(now() + config_.receive_repost_delay, kReceiveRepost,
                  static_cast<uint64_t>(rq.receive_queue));
  }
  if (r.messages > 0) [[unlikely]] {
    for (uint32_t m = 0; m < r.messages; ++m) {
      notify_host(kNicMessageArrived, rq.flow, r.sequence + uint64_t{m} * rq.lanes);
    }
  }
  if (r.reply) send_reply(r.reply_type, rq, p->timestamp, r.sacked_psn);
  if (r.arm_hole_timer) [[unlikely]] {
    schedule_self(now() + config_.receiver.nak_delay, kHoleTimer, p->receiver_qp);
  }
}

// A SEND's packet at a responder QP without a receive WQE: its first packet takes one from the
// receive queue (true), or is answered with an RNR NAK when none is posted; the packets behind
// it are dropped until it is sent again (counted out of sequence, no NAK of their own).
bool HostNic::claim_receive_wqe(ResponderQp& rq, const Packet& p) {
  if (p.psn != rq.expected_psn) {
    ++rq.counters.out_of_sequence;
    return false;
  }
  if (!receive_queues_[static_cast<size_t>(rq.receive_queue)].take()) {
    ++rq.rnr_naks;
    send_reply(PacketType::RnrNak, rq, p.timestamp);
    return false;
  }
  rq.has_wqe = true;
  return true;
}

void HostNic::send_cnp(const ResponderQp& rq) {
  Packet* c = pool().acquire();
  rq.address_reply(*c, host_);
  notification_point_.write_cnp(*c);
  c->timestamp = now();
  ++ports_[0].counters[c->priority].cnp_sent;
  ports_[0].enqueue(c);
  pump();
}

void HostNic::on_cnp(const Packet& p) {
  RequesterQp& qp = send_qps_[p.sender_qp];
  ++ports_[0].counters[p.priority].cnp_received;
  ++qp.record.cnps_received;
  if (qp.done || !qp.cc) return;
  qp.cc->on_cnp(now());
  qp.update_rate(now());
  arm_cc_timer(qp);
}

void HostNic::arm_cc_timer(RequesterQp& qp) {
  if (const Time t = qp.cc_timer_due(now()); t != Time::max()) {
    schedule_self(t, kCcTimer, static_cast<uint64_t>(&qp - send_qps_.data()));
  }
}

void HostNic::send_reply(PacketType type, ResponderQp& rq, Time echo, uint32_t sacked_psn) {
  Packet* a = pool().acquire();
  rq.write_reply(*a, type, host_, echo);
  a->set_sacked_psn(sacked_psn);
  if (config_.ack_dscp >= 0) {  // nic.ack_dscp: a class of their own
    a->dscp = static_cast<uint8_t>(config_.ack_dscp);
    a->priority = config_.dscp_to_priority[static_cast<uint8_t>(config_.ack_dscp)];
  }
  ports_[0].enqueue(a);
  pump();
}

void HostNic::on_ack(const Packet& p) {
  RequesterQp& qp = send_qps_[p.sender_qp];
  if (!qp.on_ack(p, now(), timeout_of(qp), config_.mtu.count)) return;
  acknowledged(qp, p.sender_qp);
}

// Selective repeat: the SACK's cumulative PSN acknowledges as an ACK does; the PSN it names
// may open holes to resend.
void HostNic::on_sack(const Packet& p) {
  RequesterQp& qp = send_qps_[p.sender_qp];
  if (qp.on_ack(p, now(), timeout_of(qp), config_.mtu.count)) acknowledged(qp, p.sender_qp);
  if (qp.on_sack(p.sacked_psn())) {
    activate(p.sender_qp);
    pump();
  }
}

// What follows new progress of a requester QP: its window may open, connection messages are
// acknowledged, a flow completes.
[[gnu::always_inline]] inline void HostNic::acknowledged(RequesterQp& qp, uint32_t index) {
  if (qp.cc) arm_cc_timer(qp);
  if (qp.window_blocked) {
    qp.window_blocked = false;
    pump();
  }
  if (qp.connection) {
    notify_acked_messages(qp);
    if (qp.all_acked()) leave_rotation(qp, index);
    return;
  }
  if (qp.all_acked()) {
    complete(qp);
    leave_rotation(qp, index);
  }
}

// Tells the host about every message of a connection QP that is now wholly acknowledged.
void HostNic::notify_acked_messages(RequesterQp& qp) {
  for (uint64_t sequence = 0; qp.take_acked_message(sequence);) {
    notify_host(kNicMessageAcked, qp.flow.id, sequence);
  }
}

// A QP is done; its flow completes with the last of its parts.
void HostNic::complete(RequesterQp& qp) {
  qp.done = true;
  RequesterQp& first = send_qps_[qp.first_part];
  if (--first.parts_left > 0) return;
  first.record.completed = true;
  first.record.finish = now();
  release_work();
}

void HostNic::on_nak(const Packet& p) {
  RequesterQp& qp = send_qps_[p.sender_qp];
  if (!qp.on_nak(p.psn, now(), timeout_of(qp))) return;
  if (qp.connection) notify_acked_messages(qp);
  go_back_to(qp, p.psn);
  pump();
}

// An RNR NAK: like a NAK it acknowledges what precedes its PSN and rewinds to it, and the QP
// sends nothing before the responder's minimum RNR timer has passed.
void HostNic::on_rnr_nak(const Packet& p) {
  RequesterQp& qp = send_qps_[p.sender_qp];
  if (!qp.on_nak(p.psn, now(), timeout_of(qp))) return;
  qp.rnr_until = now() + config_.min_rnr_timer;
  go_back_to(qp, p.psn);
  pump();
}

int64_t HostNic::connection_rate_cuts() const {
  int64_t cuts = 0;
  for (const RequesterQp& qp : send_qps_) {
    if (qp.connection && qp.cc) cuts += qp.cc->state(now()).cuts;
  }
  return cuts;
}

void HostNic::collect(std::vector<FlowRecord>& records) const {
  for (uint32_t i = 0; i < send_qps_.size(); ++i) {
    const RequesterQp& qp = send_qps_[i];
    if (qp.connection) continue;
    FlowRecord& r = records[qp.flow.id];
    const int64_t rate_cuts = qp.cc ? qp.cc->state(now()).cuts : 0;
    if (qp.first_part != i) {  // a later part of a flow split over QPs: its counts add up
      r.packets_sent += qp.record.packets_sent;
      r.packets_retransmitted += qp.record.packets_retransmitted;
      r.timeouts += qp.record.timeouts;
      r.cnps_received += qp.record.cnps_received;
      r.rate_cuts += rate_cuts;
      continue;
    }
    const FlowRecord received = r;
    r = qp.record;
    r.bytes_received = received.bytes_received;
    r.last_byte_received = received.last_byte_received;
    r.cnps_sent = received.cnps_sent;
    r.out_of_sequence = received.out_of_sequence;
    r.naks_sent = received.naks_sent;
    r.sacks_sent = received.sacks_sent;
    r.duplicates = received.duplicates;
    r.max_reorder_depth = received.max_reorder_depth;
    r.rnr_naks = received.rnr_naks;
    r.rate_cuts = rate_cuts;
  }
  std::vector<bool> seen(records.size(), false);
  for (const ResponderQp& rq : receive_qps_) {
    if (rq.connection) continue;
    FlowRecord& r = records[rq.flow];
    if (!seen[rq.flow]) {  // the first part of the flow on this NIC: starts the sums
      seen[rq.flow] = true;
      r.bytes_received = 0;
      r.last_byte_received = Time{};
      r.cnps_sent = r.out_of_sequence = r.naks_sent = r.sacks_sent = r.duplicates = 0;
      r.max_reorder_depth = 0;
      r.rnr_naks = 0;
    }
    r.bytes_received += rq.bytes;
    r.last_byte_received = std::max(r.last_byte_received, rq.last_byte);
    r.cnps_sent += rq.congestion.cnps;
    r.out_of_sequence += rq.counters.out_of_sequence;
    r.naks_sent += rq.counters.naks_sent;
    r.sacks_sent += rq.counters.sacks_sent;
    r.duplicates += rq.counters.duplicates;
    r.max_reorder_depth = std::max<int64_t>(r.max_reorder_depth, rq.counters.max_reorder_depth);
    r.rnr_naks += rq.rnr_naks;
  }
}

}  // namespace fabtwin
