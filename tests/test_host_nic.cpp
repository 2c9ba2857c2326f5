// One HostNic alone in a simulator, its port wired to a scripted peer that records every frame
// the NIC sends and hands it ACKs, NAKs, CNPs, data and pause frames at chosen times. Expected
// times are worked out by hand: at 100 Gb/s a byte takes 80 ps on the wire, and a frame takes
// its bytes plus 20 (preamble and inter-frame gap).
#include <vector>

#include "models/nic/host_nic.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

constexpr Time kDelay = microseconds(1);  // propagation delay of the link
constexpr int64_t kPsPerByte = 80;        // 100 Gb/s

// Wire time of a frame at 100 Gb/s.
constexpr Time wire(int frame) {
  return Time{(frame + 20) * kPsPerByte};
}

constexpr int kFirstFrame = 62 + 4096 + 16;  // headers, a full payload, RETH: 4174 B
constexpr int kFullFrame = 62 + 4096;        // 4158 B
constexpr int kAckFrame = 62 + 4;            // 66 B
constexpr int kCnpFrame = 62 + 16;           // 78 B
constexpr int kPauseFrame = 64;

// What the peer saw: a frame, when its last bit arrived.
struct Seen {
  Time time;
  PacketType type;
  uint32_t psn;  // for a pause frame: its quanta
  int payload;
  int frame;
  int priority;
  int dscp;
  uint32_t sender_qp;
  uint32_t receiver_qp;
  Time timestamp;
  bool ece;
};

// The far end of the NIC's link. It never transmits on the link itself: inject() makes a frame
// arrive at the NIC at the chosen time.
class ScriptedPeer final : public NetworkNode {
 public:
  ScriptedPeer(PacketPool& pool, ComponentId nic) : NetworkNode("peer", pool), nic_(nic) {}

  std::vector<Seen> seen;

  Packet* make(PacketType type) {
    Packet* p = pool_.acquire();
    p->type = type;
    p->src_host = 1;
    p->dst_host = 0;
    return p;
  }
  void inject(Time at, Packet* p) {
    schedule(at, nic_, make_kind(kPacketArrival, 0), reinterpret_cast<uint64_t>(p));
  }
  void ack(Time at, PacketType type, uint32_t psn, uint32_t sender_qp = 0) {
    Packet* p = make(type);
    p->psn = psn;
    p->sender_qp = sender_qp;
    p->frame = kAckFrame;
    inject(at, p);
  }
  void data(Time at, uint32_t psn, int payload, Ecn ecn = Ecn::Ect0, uint32_t message = 0,
            Time timestamp = Time{}) {
    Packet* p = make(PacketType::Data);
    p->timestamp = timestamp;
    p->psn = psn;
    p->payload = payload;
    p->frame = 62 + payload;
    p->sender_qp = 7;
    p->receiver_qp = 0;
    p->ecn = ecn;
    p->message = message;
    inject(at, p);
  }
  void pause(Time at, int priority, uint16_t quanta) {
    Packet* p = make(PacketType::Pause);
    p->priority = static_cast<uint8_t>(priority);
    p->set_pause_quanta(quanta);
    p->frame = kPauseFrame;
    inject(at, p);
  }

  std::vector<Seen> of(PacketType type) const {
    std::vector<Seen> out;
    for (const Seen& s : seen) {
      if (s.type == type) out.push_back(s);
    }
    return out;
  }

 protected:
  void on_arrival(uint32_t, Packet* p) override {
    seen.push_back({now(), p->type, p->psn, p->payload, p->frame, p->priority, p->dscp,
                    p->sender_qp, p->receiver_qp, p->timestamp, p->ece});
    pool_.release(p);
  }
  void on_transmit_done(uint32_t) override {}
  void on_timer(const Event&) override {}

 private:
  ComponentId nic_;
};

// The nic section's declared defaults; no lossless priority and every DSCP on priority 0
// unless a test says otherwise.
NicConfig base_config() {
  NicConfig c = HostNic::read_config({});
  c.ack_timeout = microseconds(1000);
  c.pfc = true;
  c.pause_quanta = 65535;
  return c;
}

// The NIC (host 0) and its peer (host 1) on a 100 Gb/s link of 1 us.
struct NicBench {
  PacketPool pool;
  Simulator sim{1};
  HostNic* nic = nullptr;
  ScriptedPeer* peer = nullptr;

  explicit NicBench(const NicConfig& config) {
    auto n = std::make_unique<HostNic>("nic", pool, 0, config);
    nic = n.get();
    const ComponentId nic_id = sim.add(std::move(n));
    auto p = std::make_unique<ScriptedPeer>(pool, nic_id);
    peer = p.get();
    const ComponentId peer_id = sim.add(std::move(p));
    for (NetworkNode* node : {static_cast<NetworkNode*>(nic), static_cast<NetworkNode*>(peer)}) {
      node->ports().resize(1);
      EgressPort& port = node->ports()[0];
      port.set_rate(BitsPerSec{100'000'000'000});
      port.delay = kDelay;
      port.peer = node == nic ? peer_id : nic_id;
    }
  }

  // A flow from the NIC to the peer; its responder QP at the peer is 0.
  uint32_t send_flow(int64_t bytes, Time start, int dscp = 0) {
    const uint32_t qp = nic->add_send_qp({0, 0, 1, Bytes{bytes}, start, dscp});
    nic->connect_send_qp(qp, 0);
    return qp;
  }
  FlowRecord record() const {
    std::vector<FlowRecord> records(1);
    nic->collect(records);
    return records[0];
  }
};

}  // namespace

TEST_CASE("nic: a message is segmented at the MTU and sent back to back at line rate", "[nic]") {
  NicBench b(base_config());
  b.send_flow(10'000, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(5), PacketType::Ack, 3);
  b.sim.run(microseconds(100));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 3);
  // 4096 + 4096 + 1808 bytes; the first packet carries the RETH.
  const int frames[] = {kFirstFrame, kFullFrame, 62 + 1808};
  const int payloads[] = {4096, 4096, 1808};
  Time sent = microseconds(1);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(data[i].psn == i);
    CHECK(data[i].payload == payloads[i]);
    CHECK(data[i].frame == frames[i]);
    CHECK(data[i].receiver_qp == 0);
    CHECK(data[i].time == sent + wire(frames[i]) + kDelay);
    sent += wire(frames[i]);
  }
  CHECK(data[1].time - data[0].time == Time{334'240});  // 4178 B x 80 ps
  const FlowRecord r = b.record();
  CHECK(r.completed);
  CHECK(r.finish == microseconds(5));
  CHECK(r.packets_sent == 3);
  CHECK(r.packets_retransmitted == 0);
  CHECK(b.nic->data_packets_sent() == 3);
}

TEST_CASE("nic: message_overhead holds a flow's first packet back by exactly the overhead",
          "[nic][message_overhead]") {
  NicConfig c = base_config();
  c.message_overhead = nanoseconds(380);
  NicBench b(c);
  b.send_flow(10'000, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(5), PacketType::Ack, 3);
  b.sim.run(microseconds(100));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 3);
  const int frames[] = {kFirstFrame, kFullFrame, 62 + 1808};
  Time sent = microseconds(1) + nanoseconds(380);
  for (uint32_t i = 0; i < 3; ++i) {
    CHECK(data[i].time == sent + wire(frames[i]) + kDelay);
    CHECK(data[i].timestamp == sent);
    sent += wire(frames[i]);
  }
  const FlowRecord r = b.record();
  CHECK(r.spec.start == microseconds(1));  // the message was posted at its start
  CHECK(r.completed);
}

TEST_CASE("nic.message_overhead is a time of 0 or more, 0 by default", "[nic][message_overhead]") {
  CHECK(HostNic::read_config({}).message_overhead == Time{});
  CHECK(HostNic::read_config({{"nic", {{"message_overhead", "0.5us"}}}}).message_overhead ==
        nanoseconds(500));
  CHECK_THROWS_WITH(HostNic::read_config({{"nic", {{"message_overhead", "-1us"}}}}),
                    Catch::Contains("nic.message_overhead"));
}

TEST_CASE("nic: DMA reads slower than the link pace the packets at the payload's read time",
          "[nic]") {
  NicConfig c = base_config();
  c.tx_dma_rate = BitsPerSec{50'000'000'000};  // 4096 B in 655.36 ns
  NicBench b(c);
  b.send_flow(3 * 4096, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(5), PacketType::Ack, 3);
  b.sim.run(microseconds(100));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 3);
  for (int i = 0; i < 3; ++i) {
    const Time sent = microseconds(1) + Time{655'360 * i};
    CHECK(data[i].time == sent + wire(data[i].frame) + kDelay);
  }
  CHECK(b.record().finish == microseconds(5));
}

TEST_CASE("nic: a NAK rewinds go-back-N to its PSN and acknowledges what precedes it", "[nic]") {
  NicBench b(base_config());
  b.send_flow(5 * 4096, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(10), PacketType::Nak, 2);
  b.peer->ack(microseconds(10) + nanoseconds(500), PacketType::Nak, 1);  // stale: ignored
  b.peer->ack(microseconds(20), PacketType::Ack, 5);
  b.sim.run(microseconds(100));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 8);
  const uint32_t psns[] = {0, 1, 2, 3, 4, 2, 3, 4};
  for (size_t i = 0; i < 8; ++i) CHECK(data[i].psn == psns[i]);
  // The rewind starts at the NAK's arrival, the port being idle; back to back from there.
  CHECK(data[5].time == microseconds(10) + wire(kFullFrame) + kDelay);
  CHECK(data[6].time == microseconds(10) + wire(kFullFrame) * 2 + kDelay);
  CHECK(data[7].time == microseconds(10) + wire(kFullFrame) * 3 + kDelay);
  const FlowRecord r = b.record();
  CHECK(r.completed);
  CHECK(r.finish == microseconds(20));
  CHECK(r.packets_sent == 8);
  CHECK(r.packets_retransmitted == 3);
  CHECK(r.timeouts == 0);
}

TEST_CASE("nic: without progress for ack_timeout the requester resends from the oldest PSN",
          "[nic]") {
  NicConfig c = base_config();
  c.ack_timeout = microseconds(20);
  NicBench b(c);
  b.send_flow(2 * 4096, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(30), PacketType::Ack, 2);
  b.sim.run(microseconds(200));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 4);
  CHECK(data[0].psn == 0);
  CHECK(data[1].psn == 1);
  // The timer runs from the first packet (1 us) and fires at 21 us.
  CHECK(data[2].psn == 0);
  CHECK(data[2].time == microseconds(21) + wire(kFirstFrame) + kDelay);
  CHECK(data[3].psn == 1);
  CHECK(data[3].time == microseconds(21) + wire(kFirstFrame) + wire(kFullFrame) + kDelay);
  const FlowRecord r = b.record();
  CHECK(r.completed);
  CHECK(r.finish == microseconds(30));
  CHECK(r.timeouts == 1);
  CHECK(r.packets_retransmitted == 2);
}

TEST_CASE("nic: the responder ACKs in order, NAKs a gap once and re-ACKs duplicates", "[nic]") {
  NicConfig c = base_config();
  c.ack_every = 2;
  NicBench b(c);
  const uint32_t rq = b.nic->add_receive_qp({0, 1, 0, Bytes{4 * 4096}, Time{}, 0}, 7);
  CHECK(rq == 0);
  b.nic->begin();
  b.peer->data(microseconds(1), 0, 4096);  // in order, 1st: no ACK (every 2nd)
  b.peer->data(microseconds(2), 2, 4096);  // gap: NAK 1
  b.peer->data(microseconds(3), 3, 4096);  // same gap: no second NAK
  b.peer->data(microseconds(4), 1, 4096);  // in order, 2nd: ACK 2
  b.peer->data(microseconds(5), 2, 4096);  // in order, 3rd: no ACK
  b.peer->data(microseconds(6), 0, 4096);  // duplicate: ACK 3
  b.peer->data(microseconds(7), 3, 4096);  // last: ACK 4
  b.sim.run(microseconds(100));

  const std::vector<Seen>& replies = b.peer->seen;
  REQUIRE(replies.size() == 4);
  const PacketType types[] = {PacketType::Nak, PacketType::Ack, PacketType::Ack, PacketType::Ack};
  const uint32_t psns[] = {1, 2, 3, 4};
  const int at_us[] = {2, 4, 6, 7};
  for (size_t i = 0; i < 4; ++i) {
    CHECK(replies[i].type == types[i]);
    CHECK(replies[i].psn == psns[i]);
    CHECK(replies[i].sender_qp == 7);
    CHECK(replies[i].frame == kAckFrame);
    CHECK(replies[i].time == microseconds(at_us[i]) + wire(kAckFrame) + kDelay);
  }
  std::vector<FlowRecord> records(1);
  b.nic->collect(records);
  CHECK(records[0].bytes_received == 4 * 4096);
  CHECK(records[0].last_byte_received == microseconds(7));
}

TEST_CASE("nic: the notification point sends one CNP per min_time_between_cnps", "[nic][dcqcn]") {
  NicConfig c = base_config();
  c.cc.algorithm = CcAlgorithm::Dcqcn;
  c.cc.dcqcn.min_time_between_cnps = microseconds(50);
  c.cc.dcqcn.cnp_dscp = 48;
  c.dscp_to_priority[48] = 6;
  NicBench b(c);
  b.nic->add_receive_qp({0, 1, 0, Bytes{100 * 4096}, Time{}, 0}, 7);
  b.nic->begin();
  const int ce_at_us[] = {1, 2, 30, 51, 52, 100, 102};
  for (uint32_t i = 0; i < 7; ++i) b.peer->data(microseconds(ce_at_us[i]), i, 4096, Ecn::Ce);
  b.peer->data(microseconds(110), 7, 4096);  // not marked: no CNP
  b.sim.run(microseconds(200));

  // 1 us; 51 us (50 us later); 102 us (51 us later). A CNP goes out ahead of its packet's ACK.
  const std::vector<Seen> cnps = b.peer->of(PacketType::Cnp);
  REQUIRE(cnps.size() == 3);
  const int sent_us[] = {1, 51, 102};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(cnps[i].time == microseconds(sent_us[i]) + wire(kCnpFrame) + kDelay);
    CHECK(cnps[i].frame == kCnpFrame);
    CHECK(cnps[i].dscp == 48);
    CHECK(cnps[i].priority == 6);
    CHECK(cnps[i].sender_qp == 7);
  }
  CHECK(b.peer->of(PacketType::Ack).size() == 8);
  CHECK(b.nic->ports()[0].counters[6].cnp_sent == 3);
  std::vector<FlowRecord> records(1);
  b.nic->collect(records);
  CHECK(records[0].cnps_sent == 3);
}

TEST_CASE("nic: cnp_delay sends each CNP exactly that long after the mark that called for it",
          "[nic][dcqcn][cnp_delay]") {
  NicConfig c = base_config();
  c.cc.algorithm = CcAlgorithm::Dcqcn;
  c.cc.dcqcn.min_time_between_cnps = microseconds(50);
  c.cc.dcqcn.cnp_dscp = 48;
  c.cc.dcqcn.cnp_delay = microseconds(3);
  c.dscp_to_priority[48] = 6;
  NicBench b(c);
  b.nic->add_receive_qp({0, 1, 0, Bytes{100 * 4096}, Time{}, 0}, 7);
  b.nic->begin();
  // The rate limit is judged at the marked arrivals, as without a delay: 1, 51 and 102 us.
  const int ce_at_us[] = {1, 2, 30, 51, 52, 100, 102};
  for (uint32_t i = 0; i < 7; ++i) b.peer->data(microseconds(ce_at_us[i]), i, 4096, Ecn::Ce);
  b.sim.run(microseconds(200));

  const std::vector<Seen> cnps = b.peer->of(PacketType::Cnp);
  REQUIRE(cnps.size() == 3);
  const int marked_us[] = {1, 51, 102};
  for (size_t i = 0; i < 3; ++i) {
    CHECK(cnps[i].time == microseconds(marked_us[i]) + microseconds(3) + wire(kCnpFrame) + kDelay);
    CHECK(cnps[i].timestamp == microseconds(marked_us[i]) + microseconds(3));
    CHECK(cnps[i].sender_qp == 7);
  }
  CHECK(b.nic->ports()[0].counters[6].cnp_sent == 3);
}

TEST_CASE("nic: a slow receive buffer sends XOFF at rx_xoff, refreshes it, XON at rx_xon",
          "[nic][pfc]") {
  NicConfig c = base_config();
  c.rx_drain_rate = BitsPerSec{100'000'000};  // a 4158 B frame drains in 334.24 us
  c.rx_xoff = 12'000;
  c.rx_xon = 8'400;
  c.lossless[3] = true;
  c.dscp_to_priority[26] = 3;
  NicBench b(c);
  b.nic->add_receive_qp({0, 1, 0, Bytes{3 * 4096}, Time{}, 26}, 7);
  b.nic->begin();
  for (uint32_t i = 0; i < 3; ++i) {
    Packet* p = b.peer->make(PacketType::Data);
    p->psn = i;
    p->payload = 4096;
    p->frame = kFullFrame;
    p->priority = 3;
    p->dscp = 26;
    p->sender_qp = 7;
    b.peer->inject(microseconds(1) + nanoseconds(100) * i, p);
  }
  b.sim.run(microseconds(2000));

  // Three frames hold 12474 B >= rx_xoff at 1.2 us: XOFF for priority 3 with the full quanta.
  // The refresh follows half a pause later (65535 quanta at 100 Gb/s = 335.5392 us). The first
  // drain ends at 1 us + 334.24 us, leaving 8316 B <= rx_xon: its ACK, then XON behind it.
  const std::vector<Seen> pauses = b.peer->of(PacketType::Pause);
  REQUIRE(pauses.size() == 3);
  const Time xoff = microseconds(1) + nanoseconds(200);
  CHECK(pauses[0].time == xoff + wire(kPauseFrame) + kDelay);
  CHECK(pauses[0].psn == 65535);
  CHECK(pauses[0].priority == 3);
  CHECK(pauses[1].time == xoff + Time{167'769'600} + wire(kPauseFrame) + kDelay);
  CHECK(pauses[1].psn == 65535);
  const Time drained = microseconds(1) + Time{334'240'000};
  CHECK(pauses[2].time == drained + wire(kAckFrame) + wire(kPauseFrame) + kDelay);
  CHECK(pauses[2].psn == 0);
  const std::vector<Seen> acks = b.peer->of(PacketType::Ack);
  REQUIRE(acks.size() == 3);
  CHECK(acks[0].time == drained + wire(kAckFrame) + kDelay);
  CHECK(acks[2].time == drained + Time{334'240'000} * 2 + wire(kAckFrame) + kDelay);
  const PriorityCounters& counters = b.nic->ports()[0].counters[3];
  CHECK(counters.xoff_transitions == 1);
  CHECK(counters.pause_sent == 2);
  CHECK(counters.xon_sent == 1);
}

TEST_CASE("nic: a received pause holds its priority's data until it expires or an XON",
          "[nic][pfc]") {
  for (const bool xon : {false, true}) {
    NicBench b(base_config());
    b.send_flow(3 * 4096, microseconds(1));
    b.nic->begin();
    // 1000 quanta at 100 Gb/s: 5.12 us, from 1.1 us (while the first packet is on the wire).
    b.peer->pause(microseconds(1) + nanoseconds(100), 0, 1000);
    if (xon) b.peer->pause(microseconds(3), 0, 0);
    b.peer->ack(microseconds(20), PacketType::Ack, 3);
    b.sim.run(microseconds(100));

    const Time resume =
        xon ? microseconds(3) : microseconds(1) + nanoseconds(100) + Time{5'120'000};
    const std::vector<Seen> data = b.peer->of(PacketType::Data);
    REQUIRE(data.size() == 3);
    CHECK(data[0].time == microseconds(1) + wire(kFirstFrame) + kDelay);
    CHECK(data[1].time == resume + wire(kFullFrame) + kDelay);
    CHECK(data[2].time == resume + wire(kFullFrame) * 2 + kDelay);
    const EgressPort& port = b.nic->ports()[0];
    CHECK(port.counters[0].pause_received == 1);
    CHECK(port.counters[0].xon_received == (xon ? 1 : 0));
    CHECK(port.counters[0].paused_time == resume - microseconds(1) - nanoseconds(100));
    CHECK(b.record().finish == microseconds(20));
  }
}

TEST_CASE("nic: an ACK echoes the timestamp of the data that triggered it and its CE mark",
          "[nic][cc]") {
  NicBench b(base_config());
  b.nic->add_receive_qp({0, 1, 0, Bytes{3 * 4096}, Time{}, 0}, 7);
  b.nic->begin();
  b.peer->data(microseconds(1), 0, 4096, Ecn::Ce, 0, Time{123});
  b.peer->data(microseconds(2), 1, 4096, Ecn::Ect0, 0, Time{456});
  b.sim.run(microseconds(10));
  const std::vector<Seen> acks = b.peer->of(PacketType::Ack);
  REQUIRE(acks.size() == 2);
  CHECK(acks[0].timestamp == Time{123});
  CHECK(acks[0].ece);
  CHECK(acks[1].timestamp == Time{456});
  CHECK_FALSE(acks[1].ece);
  CHECK(b.peer->of(PacketType::Cnp).empty());  // no notification point without DCQCN
}

namespace {
// A congestion control that records the ACKs it hears.
class AckRecorder final : public CongestionControl {
 public:
  BitsPerSec rate() const override { return {100'000'000'000}; }
  void on_ack(const AckRecord& a) override {
    last = a;
    ++acks;
  }
  CcState state(Time) const override { return {}; }
  AckRecord last;
  int acks = 0;
};
}  // namespace

TEST_CASE("queue pair: an ACK of new data reaches the congestion control as a record",
          "[nic][cc]") {
  RequesterQp qp;
  qp.packets = 10;
  qp.unacked_psn = 2;
  qp.next_psn = 6;
  qp.rate = {100'000'000'000};
  auto recorder = std::make_unique<AckRecorder>();
  const AckRecorder& r = *recorder;
  qp.cc = std::move(recorder);
  Packet ack;
  ack.type = PacketType::Ack;
  ack.psn = 5;
  ack.timestamp = microseconds(3);
  ack.ece = true;
  REQUIRE(qp.on_ack(ack, microseconds(10), microseconds(100), 4096));
  REQUIRE(r.acks == 1);
  CHECK(r.last.now == microseconds(10));
  CHECK(r.last.rtt == microseconds(7));
  CHECK(r.last.ece);
  CHECK(r.last.psn == 5);
  CHECK(r.last.next_psn == 6);
  CHECK(r.last.acked_bytes == 3 * 4096);
  CHECK(r.last.in_flight == 4096);
  CHECK(r.last.hops.empty());
  CHECK_FALSE(qp.on_ack(ack, microseconds(11), microseconds(100), 4096));  // nothing new
  CHECK(r.acks == 1);
}

TEST_CASE("nic: a queue pair keeps its bytes in flight within the congestion window", "[nic][cc]") {
  NicConfig c = base_config();
  c.cc.algorithm = CcAlgorithm::Dctcp;
  c.cc.dctcp = {3 * 4096, 0, 1.0 / 16, 1.0};
  NicBench b(c);
  b.send_flow(10 * 4096, microseconds(1));
  b.nic->begin();
  b.peer->ack(microseconds(20), PacketType::Ack, 1);
  b.sim.run(microseconds(40));
  // Three packets fill the 12 KB window. The ACK of the first ends DCTCP's first window, which
  // the window limited and nothing marked: 16 KB, and two packets follow at once.
  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 5);
  CHECK(data[2].time < microseconds(20));
  CHECK(data[3].psn == 3);
  CHECK(data[3].time == microseconds(20) + wire(kFullFrame) + kDelay);
  CHECK(data[4].psn == 4);
}

TEST_CASE("nic: selective repeat resends only the hole a SACK reveals", "[nic][receiver]") {
  NicConfig c = base_config();
  c.receiver.mode = ReceiverMode::SelectiveRepeat;
  NicBench b(c);
  b.send_flow(5 * 4096, microseconds(1));
  b.nic->begin();
  Packet* s = b.peer->make(PacketType::Sack);
  s->psn = 1;  // 0 arrived; 1 is missing, 2 arrived
  s->set_sacked_psn(2);
  s->frame = kAckFrame;
  b.peer->inject(microseconds(10), s);
  b.peer->ack(microseconds(20), PacketType::Ack, 5);
  b.sim.run(microseconds(100));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 6);
  const uint32_t psns[] = {0, 1, 2, 3, 4, 1};  // 3 and 4 are past the SACK: not holes
  for (size_t i = 0; i < 6; ++i) CHECK(data[i].psn == psns[i]);
  CHECK(data[5].time == microseconds(10) + wire(kFullFrame) + kDelay);
  const FlowRecord r = b.record();
  CHECK(r.completed);
  CHECK(r.packets_retransmitted == 1);
}

TEST_CASE("nic: out-of-order placement NAKs a hole nak_delay after it opened", "[nic][receiver]") {
  NicConfig c = base_config();
  c.receiver.mode = ReceiverMode::OutOfOrder;
  c.receiver.nak_delay = microseconds(10);
  NicBench b(c);
  b.nic->add_receive_qp({0, 1, 0, Bytes{4 * 4096}, Time{}, 0}, 7);
  b.nic->begin();
  b.peer->data(microseconds(1), 0, 4096);   // ACK 1
  b.peer->data(microseconds(2), 2, 4096);   // placed; the hole at 1 is timed from here
  b.peer->data(microseconds(3), 3, 4096);   // placed
  b.peer->data(microseconds(20), 1, 4096);  // fills the hole: ACK 4
  b.sim.run(microseconds(100));

  const std::vector<Seen>& replies = b.peer->seen;
  REQUIRE(replies.size() == 3);
  CHECK(replies[0].type == PacketType::Ack);
  CHECK(replies[0].psn == 1);
  CHECK(replies[1].type == PacketType::Nak);
  CHECK(replies[1].psn == 1);
  CHECK(replies[1].time == microseconds(12) + wire(kAckFrame) + kDelay);
  CHECK(replies[2].type == PacketType::Ack);
  CHECK(replies[2].psn == 4);
  const FlowRecord r = b.record();
  CHECK(r.bytes_received == 4 * 4096);
  CHECK(r.last_byte_received == microseconds(20));
  CHECK(r.out_of_sequence == 2);
  CHECK(r.naks_sent == 1);
  CHECK(r.max_reorder_depth == 2);
}

TEST_CASE("nic: a SEND's first frame has no RETH, and an RNR NAK holds it for min_rnr_timer",
          "[nic][send]") {
  NicConfig c = base_config();
  c.min_rnr_timer = microseconds(640);
  NicBench b(c);
  const uint32_t qp =
      b.nic->add_send_qp({0, 0, 1, Bytes{4096 + 100}, microseconds(1), 0, 0, Verb::Send});
  b.nic->connect_send_qp(qp, 0);
  b.nic->begin();
  // The responder had no receive WQE for the first packet: RNR NAK, resend from PSN 0.
  b.peer->ack(microseconds(3), PacketType::RnrNak, 0);
  b.peer->ack(microseconds(700), PacketType::Ack, 2);
  b.sim.run(microseconds(1000));

  const std::vector<Seen> data = b.peer->of(PacketType::Data);
  REQUIRE(data.size() == 4);
  CHECK(data[0].frame == kFullFrame);  // a WRITE's would be kFirstFrame, 16 B longer
  CHECK(data[1].frame == 62 + 100);
  // Both packets were on the wire before the NAK; the resend waits out the RNR timer.
  CHECK(data[2].psn == 0);
  CHECK(data[2].time == microseconds(3) + microseconds(640) + wire(kFullFrame) + kDelay);
  CHECK(data[3].psn == 1);
  const FlowRecord r = b.record();
  CHECK(r.completed);
  CHECK(r.finish == microseconds(700));
  CHECK(r.packets_retransmitted == 2);
}

TEST_CASE("nic: SENDs take receive WQEs, and one that finds none is answered with an RNR NAK",
          "[nic][send]") {
  NicConfig c = base_config();
  c.receive_queue_depth = 1;
  c.receive_repost_delay = microseconds(10);
  NicBench b(c);
  // Two SEND flows from host 1 (one packet each), responder QPs 0 and 1, and a WRITE, QP 2.
  b.nic->add_receive_qp({0, 1, 0, Bytes{1000}, Time{}, 0, 0, Verb::Send}, 7);
  b.nic->add_receive_qp({1, 1, 0, Bytes{2000}, Time{}, 0, 0, Verb::Send}, 8);
  b.nic->add_receive_qp({2, 1, 0, Bytes{1000}, Time{}, 0, 0, Verb::Write}, 9);
  b.nic->begin();
  const auto data = [&](Time at, uint32_t receiver_qp, uint32_t psn, int payload) {
    Packet* p = b.peer->make(PacketType::Data);
    p->psn = psn;
    p->payload = payload;
    p->frame = 62 + payload;
    p->sender_qp = 7 + receiver_qp;
    p->receiver_qp = receiver_qp;
    b.peer->inject(at, p);
  };
  data(microseconds(1), 0, 0, 1000);   // takes the one WQE; reposted at 11 us
  data(microseconds(2), 1, 0, 1000);   // none posted: RNR NAK
  data(microseconds(3), 1, 1, 1000);   // behind the RNR NAK: dropped, no NAK of its own
  data(microseconds(4), 2, 0, 1000);   // a WRITE needs no WQE
  data(microseconds(12), 1, 0, 1000);  // after the repost: accepted
  data(microseconds(13), 1, 1, 1000);
  b.sim.run(microseconds(100));

  std::vector<Seen> replies;
  for (const Seen& s : b.peer->seen) {
    if (s.type != PacketType::Data) replies.push_back(s);
  }
  REQUIRE(replies.size() == 5);
  CHECK(replies[0].type == PacketType::Ack);
  CHECK(replies[0].sender_qp == 7);
  CHECK(replies[1].type == PacketType::RnrNak);
  CHECK(replies[1].sender_qp == 8);
  CHECK(replies[1].psn == 0);  // send again from PSN 0
  CHECK(replies[1].frame == kAckFrame);
  CHECK(replies[2].type == PacketType::Ack);
  CHECK(replies[2].sender_qp == 9);
  CHECK(replies[3].type == PacketType::Ack);
  CHECK(replies[3].psn == 1);
  CHECK(replies[4].type == PacketType::Ack);
  CHECK(replies[4].psn == 2);

  std::vector<FlowRecord> records(3);
  b.nic->collect(records);
  CHECK(records[0].rnr_naks == 0);
  CHECK(records[1].rnr_naks == 1);
  CHECK(records[1].out_of_sequence == 1);
  CHECK(records[1].naks_sent == 0);
  CHECK(records[1].bytes_received == 2000);
  CHECK(records[2].rnr_naks == 0);
}

TEST_CASE("nic: a receive queue holds its depth and is reposted up to it", "[nic][send]") {
  ReceiveQueue q = ReceiveQueue::full(2);
  CHECK(q.take());
  CHECK(q.take());
  CHECK_FALSE(q.take());
  q.repost();
  CHECK(q.take());
  q.repost();
  q.repost();
  q.repost();  // never more than the depth
  CHECK(q.posted == 2);
}
