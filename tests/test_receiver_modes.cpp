// The receiver modes (nic.receiver) on RequesterQp and ResponderQp alone: go-back-N's counters,
// out-of-order placement (placement, the cumulative ACK over the filled prefix, message
// completion, the hole timer) and selective repeat (SACKs, holes resent once, the BDP cap,
// IRN's two timeouts). The NIC end to end is in test_host_nic.cpp, whole fabrics at the end.
#include "models/fabric/fabric.h"
#include "models/nic/queue_pair.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

Packet data(uint32_t psn, int payload = 4096, uint32_t message = 0) {
  Packet p;
  p.type = PacketType::Data;
  p.psn = psn;
  p.payload = payload;
  p.message = message;
  return p;
}

ResponderQp responder(ReceiverMode mode, uint32_t packets, int window = 64) {
  ResponderQp rq;
  rq.packets = packets;
  rq.set_mode(mode, window);
  return rq;
}

RequesterQp selective_requester(uint32_t packets, int window = 64) {
  RequesterQp qp;
  qp.packets = packets;
  qp.flow.size = Bytes{int64_t{packets} * 4096};
  qp.mode = ReceiverMode::SelectiveRepeat;
  qp.sacked.reset(static_cast<uint32_t>(window));
  return qp;
}

Packet ack(uint32_t psn, Time timestamp = Time{}) {
  Packet a;
  a.type = PacketType::Ack;
  a.psn = psn;
  a.timestamp = timestamp;
  return a;
}

}  // namespace

TEST_CASE("psn bitmap: a ring of PSNs, rounded up to a power of two", "[receiver]") {
  PsnBitmap b;
  b.reset(100);
  CHECK(b.capacity() == 128);
  b.set(5);
  b.set(5 + 64);
  CHECK(b.test(5));
  CHECK(b.test(69));
  CHECK_FALSE(b.test(6));
  CHECK(b.test(5 + 128));  // the same slot one lap later
  b.clear(133);
  CHECK_FALSE(b.test(5));
}

TEST_CASE("go-back-N counts out-of-sequence packets, one NAK per gap, duplicates and depth",
          "[receiver]") {
  ResponderQp rq = responder(ReceiverMode::GoBackN, 8);
  CHECK(rq.on_data(data(0), Time{}, 1).reply);
  const auto gap = rq.on_data(data(3), Time{}, 1);
  CHECK(gap.reply_type == PacketType::Nak);
  CHECK_FALSE(rq.on_data(data(4), Time{}, 1).reply);  // the same gap: no second NAK
  CHECK(rq.on_data(data(0), Time{}, 1).reply);        // duplicate: re-ACK
  CHECK(rq.expected_psn == 1);
  CHECK(rq.counters.out_of_sequence == 2);
  CHECK(rq.counters.naks_sent == 1);
  CHECK(rq.counters.duplicates == 1);
  CHECK(rq.counters.max_reorder_depth == 3);  // PSN 4 with 1 expected
  CHECK(rq.bytes == 4096);                    // later packets were dropped
}

TEST_CASE("out-of-order placement places ahead, then ACKs over the filled prefix", "[receiver]") {
  ResponderQp rq = responder(ReceiverMode::OutOfOrder, 6);
  CHECK(rq.on_data(data(0), Time{}, 1).reply);
  const auto first_ahead = rq.on_data(data(2), Time{}, 1);
  CHECK_FALSE(first_ahead.reply);  // placed silently: no NAK
  CHECK(first_ahead.arm_hole_timer);
  CHECK(rq.hole_psn == 1);
  CHECK_FALSE(rq.on_data(data(3), Time{}, 1).arm_hole_timer);  // the timer already runs
  CHECK(rq.on_data(data(3), Time{}, 1).reply);  // a placed packet again is a duplicate
  CHECK(rq.counters.duplicates == 1);
  const auto filled = rq.on_data(data(1), microseconds(5), 1);
  CHECK(filled.reply);
  CHECK(filled.reply_type == PacketType::Ack);
  CHECK(rq.expected_psn == 4);  // 1, then 2 and 3 placed before it
  CHECK(rq.bytes == 4 * 4096);
  CHECK(rq.counters.out_of_sequence == 2);
  CHECK(rq.counters.naks_sent == 0);
  CHECK(rq.counters.max_reorder_depth == 2);
  rq.on_data(data(5, 100), microseconds(6), 1);
  CHECK(rq.last_byte == Time{});  // PSN 4 still missing
  rq.on_data(data(4), microseconds(7), 1);
  CHECK(rq.expected_psn == 6);
  CHECK(rq.last_byte == microseconds(7));
  CHECK(rq.bytes == 5 * 4096 + 100);
}

TEST_CASE("out-of-order placement NAKs a hole only if the timer finds it still open",
          "[receiver]") {
  ResponderQp rq = responder(ReceiverMode::OutOfOrder, 10);
  rq.on_data(data(1), Time{}, 1);  // hole at 0
  CHECK(rq.hole_timer);
  CHECK(rq.on_hole_timer());  // still open: NAK 0
  CHECK(rq.counters.naks_sent == 1);
  CHECK(rq.hole_timer);  // re-armed for the hole that remains
  rq.on_data(data(0), Time{}, 1);
  CHECK(rq.expected_psn == 2);
  CHECK_FALSE(rq.on_hole_timer());  // filled, and nothing placed past it: no NAK, no timer
  CHECK_FALSE(rq.hole_timer);
  rq.on_data(data(4), Time{}, 1);   // a new hole at 2
  rq.on_data(data(2), Time{}, 1);   // moved on, but 3 is now missing
  CHECK_FALSE(rq.on_hole_timer());  // not the hole it was armed for
  CHECK(rq.hole_timer);
  CHECK(rq.hole_psn == 3);
  CHECK(rq.counters.naks_sent == 1);
}

TEST_CASE("out-of-order placement drops what lies beyond its window", "[receiver]") {
  ResponderQp rq = responder(ReceiverMode::OutOfOrder, 200, 64);
  rq.on_data(data(70), Time{}, 1);
  CHECK(rq.highest_psn == 0);  // not placed
  CHECK(rq.counters.out_of_sequence == 1);
  CHECK(rq.hole_timer);  // the hole at 0 is still timed
  rq.on_data(data(0), Time{}, 1);
  CHECK(rq.expected_psn == 1);
}

TEST_CASE("a connection's messages complete in order once all their packets are in", "[receiver]") {
  ResponderQp rq;
  rq.connection = true;
  rq.lane = 1;
  rq.lanes = 2;
  rq.packets = UINT32_MAX;
  rq.set_mode(ReceiverMode::OutOfOrder, 64);
  // Messages: PSNs 0-1 (mark 1 on PSN 1) and 2 (mark 2); they arrive 2, 1, 0.
  CHECK(rq.on_data(data(2, 10, 2), Time{}, 1).messages == 0);
  CHECK(rq.on_data(data(1, 4096, 1), Time{}, 1).messages == 0);
  const auto all = rq.on_data(data(0), Time{}, 1);
  CHECK(all.messages == 2);
  CHECK(all.sequence == 1);  // message 0 of lane 1 of 2; the next is 1 + 2
  CHECK(rq.messages_arrived == 2);
}

TEST_CASE("selective repeat SACKs every packet placed out of order", "[receiver]") {
  ResponderQp rq = responder(ReceiverMode::SelectiveRepeat, 8);
  rq.on_data(data(0), Time{}, 1);
  const auto s = rq.on_data(data(2), Time{}, 1);
  CHECK(s.reply);
  CHECK(s.reply_type == PacketType::Sack);
  CHECK(s.sacked_psn == 2);
  CHECK_FALSE(s.arm_hole_timer);
  CHECK(rq.on_data(data(3), Time{}, 1).sacked_psn == 3);
  CHECK(rq.counters.sacks_sent == 2);
  CHECK(rq.counters.naks_sent == 0);
  Packet a;
  rq.write_reply(a, PacketType::Sack, 1, Time{});
  a.set_sacked_psn(3);
  CHECK(a.psn == 1);  // cumulative
  CHECK(a.sacked_psn() == 3);
  CHECK(rq.on_data(data(1), Time{}, 1).reply_type == PacketType::Ack);
  CHECK(rq.expected_psn == 4);
}

TEST_CASE("the selective-repeat requester resends each hole once, then new data", "[receiver]") {
  RequesterQp qp = selective_requester(10);
  qp.next_psn = 6;                                // 0..5 in flight
  CHECK(qp.next_hole() == RequesterQp::kNoHole);  // no recovery yet
  CHECK(qp.on_sack(3));                           // 0, 1, 2 are holes
  CHECK(qp.recovery);
  CHECK(qp.next_hole() == 0);
  qp.resend_next = 1;  // 0 resent
  CHECK(qp.on_ack(ack(1), microseconds(1), microseconds(100), 4096));
  CHECK(qp.next_hole() == 1);
  qp.resend_next = 2;
  CHECK(qp.on_sack(5));  // widens the recovery: 4 is a hole too, 3 is not
  CHECK(qp.next_hole() == 2);
  qp.resend_next = 3;
  CHECK(qp.next_hole() == 4);
  qp.resend_next = 5;
  CHECK(qp.next_hole() == RequesterQp::kNoHole);
  CHECK_FALSE(qp.on_sack(5));  // known: nothing new
  CHECK_FALSE(qp.on_sack(8));  // never sent
  CHECK(qp.on_ack(ack(6), microseconds(2), microseconds(100), 4096));
  CHECK_FALSE(qp.recovery);  // everything to the highest SACK acknowledged
  for (uint32_t psn = 0; psn < 64; ++psn) CHECK_FALSE(qp.sacked.test(psn));  // cleared
  CHECK(qp.sends_pending());                                                 // 6..9 are new
}

TEST_CASE("the selective-repeat requester resends every unSACKed packet on a timeout",
          "[receiver]") {
  RequesterQp qp = selective_requester(10);
  qp.next_psn = 5;
  qp.on_sack(2);
  qp.resend_next = 2;  // 0 and 1 resent
  qp.on_timeout();
  CHECK(qp.record.timeouts == 1);
  CHECK(qp.next_psn == 5);  // no rewind
  std::vector<uint32_t> holes;
  for (uint32_t h; (h = qp.next_hole()) != RequesterQp::kNoHole; qp.resend_next = h + 1) {
    holes.push_back(h);
  }
  CHECK(holes == std::vector<uint32_t>{0, 1, 3, 4});
}

TEST_CASE("the selective-repeat requester caps bytes in flight at the BDP", "[receiver]") {
  RequesterQp qp = selective_requester(100, 1024);
  qp.line_rate = BitsPerSec{100'000'000'000};
  qp.bdp_auto = true;
  qp.next_psn = 40;
  CHECK(qp.cap_open(4096));  // no cap before the first RTT sample
  // An RTT of 4 us at 100 Gb/s: a BDP of 50,000 bytes, 12 packets of 4096 B.
  qp.on_ack(ack(1, microseconds(1)), microseconds(5), microseconds(100), 4096);
  CHECK(qp.bdp_cap == 50'000);
  CHECK_FALSE(qp.cap_open(4096));                                                 // 39 in flight
  qp.on_ack(ack(28, microseconds(2)), microseconds(7), microseconds(100), 4096);  // 5 us
  CHECK(qp.bdp_cap == 50'000);     // the smallest RTT sets it
  CHECK_FALSE(qp.cap_open(4096));  // 12 in flight: a 13th would make 53,248 bytes
  qp.on_ack(ack(29, microseconds(6)), microseconds(10), microseconds(100), 4096);
  CHECK(qp.cap_open(4096));  // 11 in flight: a 12th makes 49,152 bytes
  RequesterQp small = selective_requester(100, 64);
  small.next_psn = 63;
  CHECK_FALSE(small.cap_open(4096));  // the SACK window is full
}

TEST_CASE("selective repeat's timeout is IRN's RTO_low with few packets in flight", "[receiver]") {
  ReceiverConfig c = read_receiver_config({});
  CHECK(c.rto_low == microseconds(100));
  CHECK(c.rto_high == microseconds(320));
  CHECK(c.rto_low_packets == 3);
  RequesterQp qp = selective_requester(10);
  qp.next_psn = 3;
  CHECK(qp.retransmit_timeout(c) == microseconds(100));
  qp.next_psn = 4;
  CHECK(qp.retransmit_timeout(c) == microseconds(320));
}

TEST_CASE("nic.receiver rejects an unknown mode and crossed timeouts by path", "[receiver]") {
  CHECK(read_receiver_config({{"mode", "out_of_order"}}).mode == ReceiverMode::OutOfOrder);
  CHECK(read_receiver_config({}).mode == ReceiverMode::GoBackN);
  CHECK_THROWS_WITH(read_receiver_config({{"mode", "sack"}}), Catch::Contains("nic.receiver.mode"));
  CHECK_THROWS_WITH(read_receiver_config({{"rto_low", "1ms"}}),
                    Catch::Contains("nic.receiver.rto_low"));
  CHECK_THROWS_WITH(read_receiver_config({{"window", 0}}), Catch::Contains("nic.receiver.window"));
}

namespace {

RunResult run_json(const nlohmann::json& scenario, const std::vector<std::string>& sets) {
  ScenarioDocument doc = testing::inline_document(scenario);
  for (const std::string& s : sets) apply_override(doc.root, s);
  Fabric fabric(doc);
  return fabric.run();
}

// Four senders into one receiver through a small switch buffer without PFC: drops.
RunResult lossy_incast(const std::string& mode) {
  const nlohmann::json scenario = {
      {"topology", {{"type", "star"}, {"hosts", 5}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"traffic", {{{"type", "incast"}, {"receiver", 0}, {"size", "1MB"}}}},
      {"run", {{"end", "1s"}}}};
  return run_json(scenario, {"fabric.switch.buffer=200KB", "fabric.switch.reserve=0B",
                             "fabric.pfc.enabled=false", "nic.ack_timeout=100us",
                             "nic.receiver={\"mode\": \"" + mode + "\"}"});
}

}  // namespace

TEST_CASE("every receiver mode recovers an incast's drops, selective repeat resending least",
          "[receiver][run]") {
  int64_t retransmitted[3] = {};
  const char* modes[] = {"go_back_n", "out_of_order", "selective_repeat"};
  for (int m = 0; m < 3; ++m) {
    const RunResult r = lossy_incast(modes[m]);
    int64_t drops = 0;
    for (const PortRecord& p : r.ports) drops += p.drops();
    CHECK(drops > 0);
    for (const FlowRecord& f : r.flows) {
      CHECK(f.completed);
      CHECK(f.bytes_received == 1'000'000);
      retransmitted[m] += f.packets_retransmitted;
      if (m == 2) CHECK(f.naks_sent == 0);
      if (m != 2) CHECK(f.sacks_sent == 0);
    }
  }
  CHECK(retransmitted[2] < retransmitted[0]);
}

TEST_CASE("qps_per_flow splits a flow over QPs that all must finish", "[receiver][run]") {
  const nlohmann::json scenario = {
      {"topology", {{"type", "star"}, {"hosts", 2}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"traffic", {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "1MB"}}}}}}},
      {"run", {{"end", "1s"}}}};
  const RunResult one = run_json(scenario, {});
  const RunResult four = run_json(scenario, {"nic.qps_per_flow=4"});
  REQUIRE(four.flows.size() == 1);
  const FlowRecord& f = four.flows[0];
  CHECK(f.completed);
  CHECK(f.bytes_received == 1'000'000);
  // Parts of 250,112 B (a quarter rounded up to 128 B), the last 249,664 B: 62 + 62 + 62 + 61.
  CHECK(f.packets_sent == 247);
  CHECK(one.flows[0].packets_sent == 245);
  // The parts share the link round robin: the flow ends about when one QP would have.
  CHECK(f.fct().seconds() == Approx(one.flows[0].fct().seconds()).epsilon(0.02));
}

TEST_CASE("a WRITE with immediate after the data completes the message, after all of it",
          "[receiver][collectives]") {
  RequesterQp qp;
  qp.connection = true;
  qp.post_message(10'000, 4096, Time{}, microseconds(100), true);  // 3 data packets + 1
  REQUIRE(qp.packets == 4);
  Packet p[4];
  for (Packet& x : p) qp.write_next_packet(x, 0, 0, 4096);
  CHECK(p[2].payload == 10'000 - 2 * 4096);
  CHECK(p[2].message == 0);  // the data's last packet does not complete the message
  CHECK(p[3].payload == 0);
  CHECK(p[3].message == 1);
  CHECK(p[3].frame == roce::data_frame(0, true) + kImmediateBytes);
  // Out of order, the immediate first: the message is whole only when the data is in.
  ResponderQp rq;
  rq.connection = true;
  rq.packets = UINT32_MAX;
  rq.set_mode(ReceiverMode::OutOfOrder, 64);
  CHECK(rq.on_data(p[3], Time{}, 1).messages == 0);
  CHECK(rq.on_data(p[1], Time{}, 1).messages == 0);
  CHECK(rq.on_data(p[2], Time{}, 1).messages == 0);
  CHECK(rq.on_data(p[0], Time{}, 1).messages == 1);
  CHECK(rq.bytes == 10'000);
}

namespace {

RunResult all_gather(const std::vector<std::string>& extra) {
  ScenarioDocument doc =
      testing::inline_document({{"topology",
                                 {{"type", "rail_optimized"},
                                  {"nodes", 2},
                                  {"gpus_per_node", 2},
                                  {"nics_per_node", 1},
                                  {"spines", 0}}},
                                {"fabric", {{"link", {{"rate", "200Gbps"}, {"delay", "1us"}}}}},
                                {"traffic",
                                 {{{"type", "collective"},
                                   {"op", "all_gather"},
                                   {"size", "1MiB"},
                                   {"iterations", 1},
                                   {"warmup_iterations", 0}}}},
                                {"run", {{"end", "100ms"}}}});
  for (const std::string& s : extra) apply_override(doc.root, s);
  Fabric fabric(doc);
  return fabric.run();
}

}  // namespace

TEST_CASE(
    "nccl: split data on QPs puts a part of every message on each QP, AR mode adds one "
    "packet per message above the threshold",
    "[receiver][collectives]") {
  const RunResult plain = all_gather({"nccl.ib_qps_per_connection=4"});
  const RunResult split =
      all_gather({"nccl.ib_qps_per_connection=4", "nccl.ib_split_data_on_qps=true"});
  const RunResult ar = all_gather({"nccl.ib_qps_per_connection=4", "nccl.ib_adaptive_routing=true",
                                   "nccl.ib_ar_threshold=8192B"});
  int64_t plain_packets = 0, split_packets = 0, above = 0, messages = 0;
  for (const CollectiveTransferRecord& t : plain.collective_transfers) {
    if (t.transport != CollectiveTransport::Net) continue;
    ++messages;
    above += t.bytes > 8192 ? 1 : 0;
    plain_packets += std::max<int64_t>(1, (t.bytes + 4095) / 4096);
    const int64_t chunk = ((t.bytes + 3) / 4 + 127) / 128 * 128;
    for (int q = 0; q < 4; ++q) {
      const int64_t part = std::clamp<int64_t>(t.bytes - chunk * q, 0, chunk);
      split_packets += std::max<int64_t>(1, (part + 4095) / 4096);
    }
  }
  REQUIRE(messages > 0);
  REQUIRE(above > 0);
  CHECK(plain.data_packets_sent == plain_packets);
  CHECK(split.data_packets_sent == split_packets);
  CHECK(ar.data_packets_sent == plain_packets + above);
  for (const RunResult* r : {&plain, &split, &ar}) {
    REQUIRE(r->collectives.size() == 1);
    CHECK(r->collective_transfers.size() == plain.collective_transfers.size());
    for (const CollectiveTransferRecord& t : r->collective_transfers) CHECK(t.arrived > t.posted);
  }
}
