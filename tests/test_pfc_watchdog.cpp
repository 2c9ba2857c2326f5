// The PFC watchdog (fabric.pfc.watchdog) on a switch between scripted hosts, one of which sends
// XOFF frames without end (a pause storm), on a NIC paused by a scripted peer, and in whole
// runs with a stalled receiver (nic.rx_stall); and the two PFC timing defects it came with:
// the NIC's XOFF refresh that ignored fabric.pfc.refresh_interval, and an XOFF that ran out at
// the peer while its ingress stayed over the threshold. Times are worked out by hand: at
// 100 Gb/s a byte takes 80 ps on the wire, a frame its bytes plus 20.
#include <filesystem>
#include <vector>

#include "models/fabric/fabric.h"
#include "models/fabric/topology.h"
#include "models/net/pfc.h"
#include "models/net/routing.h"
#include "models/net/switch.h"
#include "models/nic/host_nic.h"
#include "run_records.h"
#include "star_bench.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

constexpr Time kDelay = microseconds(1);
constexpr uint32_t kSendAt = kFirstModelHandler;      // data = index into the timed packets
constexpr uint32_t kStorm = kFirstModelHandler + 1;   // data = priority: the next storm XOFF
constexpr uint32_t kResume = kFirstModelHandler + 2;  // a pause received may have run out

constexpr Time wire(int frame) {
  return Time{(frame + 20) * 80};
}

// A scripted end of a link: sends the packets it is given (now or at set times), honours pause,
// records what arrives, and can storm: send an XOFF of 65535 quanta every `every` from `from`
// until `to` on one priority, whatever it receives.
class ScriptedHost final : public NetworkNode {
 public:
  ScriptedHost(std::string name, PacketPool& pool) : NetworkNode(std::move(name), pool) {}

  struct Arrival {
    Time time;
    PacketType type;
    uint32_t psn;
  };
  std::vector<Arrival> arrivals;

  void send_at(Time at, Packet* p) {
    timed_.push_back(p);
    schedule_self(at, kSendAt, timed_.size() - 1);
  }
  void storm(Time from, Time to, Time every, int priority) {
    storm_to_ = to;
    storm_every_ = every;
    schedule_self(from, kStorm, static_cast<uint64_t>(priority));
  }
  std::vector<Arrival> of(PacketType type) const {
    std::vector<Arrival> out;
    for (const Arrival& a : arrivals) {
      if (a.type == type) out.push_back(a);
    }
    return out;
  }

 protected:
  void on_arrival(uint32_t, Packet* p) override {
    if (p->type == PacketType::Pause) {
      const Time d = pfc::pause_duration(p->pause_quanta(), ports_[0].rate);
      ports_[0].pause(p->priority, now(), d);
      schedule_self(now() + d, kResume, 0);
    }
    arrivals.push_back({now(), p->type, p->psn});
    pool_.release(p);
  }
  void on_transmit_done(uint32_t) override {
    if (!port_free(0)) {
      if (ports_[0].has_backlog() || ports_[0].pause_waiting()) request_transmit_done(0);
      return;
    }
    if (transmit_pending_pause(0)) {
      request_transmit_done(0);
      return;
    }
    const int prio = ports_[0].select(now());
    if (prio < 0) return;
    transmit_queued(0, prio);
    if (ports_[0].has_backlog() || ports_[0].pause_waiting()) request_transmit_done(0);
  }
  void on_timer(const Event& e) override {
    if (kind_handler(e.kind) == kSendAt) {
      ports_[0].enqueue(timed_[e.data]);
    } else if (kind_handler(e.kind) == kStorm) {
      ports_[0].queue_pause(static_cast<uint8_t>(e.data), pfc::kMaxQuanta);
      if (now() + storm_every_ < storm_to_) schedule_self(now() + storm_every_, kStorm, e.data);
    }
    on_transmit_done(0);
  }

 private:
  std::vector<Packet*> timed_;
  Time storm_to_{};
  Time storm_every_{};
};

// The star bench with this file's scripted hosts and a watchdog configured on the switch.
struct StarBench : testing::StarBench<ScriptedHost> {
  explicit StarBench(const nlohmann::json& watchdog)
      : testing::StarBench<ScriptedHost>(read_switch_config(
            {{"fabric", {{"pfc", {{"watchdog", watchdog}}}}}}, roce::data_frame(4096, true))) {}
  // Lossless priorities 3 and 4, and `table` at the switch.
  StarBench(const nlohmann::json& watchdog, const ForwardingTable& table)
      : testing::StarBench<ScriptedHost>(
            read_switch_config(
                {{"fabric", {{"pfc", {{"watchdog", watchdog}, {"lossless_priorities", {3, 4}}}}}}},
                roce::data_frame(4096, true)),
            &table) {}

  // A lossless (priority 3, DSCP 26) data packet of 4096 B of payload.
  Packet* packet(int src, int dst, uint32_t psn) {
    Packet* p = pool.acquire();
    p->type = PacketType::Data;
    p->dscp = 26;
    p->ecn = Ecn::NotEct;
    p->src_host = src;
    p->dst_host = dst;
    p->psn = psn;
    p->payload = 4096;
    p->frame = roce::data_frame(4096, false);
    p->priority = 3;
    return p;
  }
  const PriorityCounters& switch_port(int port) const { return sw->ports()[port].counters[3]; }
};

const nlohmann::json kWatchdog200us = {
    {"enabled", true}, {"detection_time", "200us"}, {"restoration_time", "200us"}};

nlohmann::json with_action(const std::string& action) {
  nlohmann::json w = kWatchdog200us;
  w["action"] = action;
  return w;
}

RunResult run_scenario(const ScenarioDocument& doc, int threads = 1) {
  Fabric fabric(doc, threads);
  return fabric.run();
}

RunResult run_scenario(const nlohmann::json& scenario) {
  return run_scenario(testing::inline_document(scenario));
}

}  // namespace

TEST_CASE("watchdog: the defaults are SONiC's, off, and a bad value names its path",
          "[pfc][watchdog]") {
  const SwitchConfig c = read_switch_config({}, roce::data_frame(4096, true));
  CHECK_FALSE(c.watchdog.enabled);
  CHECK(c.watchdog.detection_time == milliseconds(200));
  CHECK(c.watchdog.restoration_time == milliseconds(200));
  CHECK(c.watchdog.poll_interval == milliseconds(200));
  CHECK(c.watchdog.drop);
  CHECK(c.watchdog.nics);
  // auto polling never exceeds the detection or restoration time (SONiC refuses it)
  const SwitchConfig fast = read_switch_config(
      {{"fabric", {{"pfc", {{"watchdog", {{"detection_time", "50us"}}}}}}}}, 4174);
  CHECK(fast.watchdog.poll_interval == microseconds(50));
  CHECK_THROWS_WITH(
      read_switch_config({{"fabric", {{"pfc", {{"watchdog", {{"action", "shutdown"}}}}}}}}, 4174),
      Catch::Contains("fabric.pfc.watchdog.action") && Catch::Contains("drop"));
  CHECK_THROWS_WITH(read_switch_config(
                        {{"fabric", {{"pfc", {{"watchdog", {{"detection_time", "0us"}}}}}}}}, 4174),
                    Catch::Contains("fabric.pfc.watchdog.detection_time"));
  CHECK_THROWS_WITH(read_switch_config({{"fabric", {{"pfc", {{"watchdog", 3}}}}}}, 4174),
                    Catch::Contains("fabric.pfc.watchdog"));
  // nic.rx_stall names hosts by index; one beyond any int is refused, not wrapped.
  CHECK_THROWS_WITH(HostNic::read_config({{"nic", {{"rx_stall", {{"hosts", {4294967296}}}}}}}),
                    Catch::Contains("nic.rx_stall.hosts[0]") && Catch::Contains("4294967296"));
  // A poll is an event per paused port: a 1 ps grid would never let a run end.
  CHECK_THROWS_WITH(
      read_switch_config(
          {{"fabric", {{"pfc", {{"watchdog", {{"enabled", true}, {"poll_interval", "1ps"}}}}}}}},
          4174),
      Catch::Contains("fabric.pfc.watchdog.poll_interval") && Catch::Contains("at least 1us"));
  CHECK_THROWS_WITH(
      read_switch_config(
          {{"fabric", {{"pfc", {{"watchdog", {{"enabled", true}, {"detection_time", "1ps"}}}}}}}},
          4174),
      Catch::Contains("fabric.pfc.watchdog.poll_interval") && Catch::Contains("at least 1us"));
}

TEST_CASE("watchdog: a queue paused past detection_time is a storm, drop discards and counts",
          "[pfc][watchdog]") {
  StarBench b(with_action("drop"));
  // Host 2 never stops pausing until 1 ms: its first XOFF reaches the switch at 1 us + 84 B.
  b.hosts[2]->storm(Time{}, milliseconds(1), microseconds(100), 3);
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send_at(Time{}, b.packet(0, 2, i));
  b.hosts[0]->send_at(microseconds(600), b.packet(0, 2, 10));   // during the storm
  b.hosts[0]->send_at(microseconds(1300), b.packet(0, 2, 11));  // after restoration
  b.sim.run(milliseconds(2));

  // Polls every 200 us: at 200 us the queue has been paused 199 us, at 400 us it is a storm.
  const PriorityCounters& c = b.switch_port(2);
  CHECK(c.watchdog_storms == 1);
  CHECK(c.watchdog_drops == 11);  // the 10 queued at 400 us and the one at 600 us
  CHECK(c.drops == 11);
  CHECK(c.drop_bytes == 11 * roce::data_frame(4096, false));
  CHECK(c.pause_received == 10);  // every storm XOFF is counted, obeyed or not
  // The last XOFF (900 us) arrives at 901 us: at 1000 us 99 us without one, at 1200 us 299 us:
  // restored. The packet sent at 1300 us then crosses the switch as usual.
  const std::vector<ScriptedHost::Arrival> data = b.hosts[2]->of(PacketType::Data);
  REQUIRE(data.size() == 1);
  CHECK(data[0].psn == 11);
  const Time hop = wire(roce::data_frame(4096, false)) + kDelay;
  CHECK(data[0].time == microseconds(1300) + hop * 2);
  // Dropping freed the ingress: host 0 was never paused.
  CHECK(b.sw->ports()[0].counters[3].pause_sent == 0);
  CHECK(b.sw->ports()[0].counters[3].watchdog_storms == 0);
}

TEST_CASE("watchdog: under a priority rewrite, drop frees the arrival priority's ingress group",
          "[pfc][watchdog]") {
  // The switch moves host 0's priority 3 to priority 4 (Tagger-style); host 2 storms on 4.
  const Topology star = build_star(3, parse_rate("100Gbps"), kDelay);
  ForwardingTable table = RoutingTable(star).table(3);
  table.rewrites.resize(3 * kPriorities);
  for (size_t i = 0; i < table.rewrites.size(); ++i) {
    table.rewrites[i] = static_cast<uint8_t>(i % kPriorities);
  }
  table.rewrites[0 * kPriorities + 3] = 4;
  StarBench b(with_action("drop"), table);
  b.hosts[2]->storm(Time{}, milliseconds(1), microseconds(100), 4);
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send_at(Time{}, b.packet(0, 2, i));
  b.hosts[0]->send_at(microseconds(600), b.packet(0, 2, 10));  // during the storm: dropped
  b.sim.run(milliseconds(2));
  const PriorityCounters& queue4 = b.sw->ports()[2].counters[4];
  CHECK(queue4.watchdog_storms == 1);
  CHECK(queue4.watchdog_drops == 11);
  CHECK(b.hosts[2]->of(PacketType::Data).empty());
  // Every byte went back to the group it was admitted in (port 0, priority 3): nothing held.
  CHECK(b.sw->buffer().used() == 0);
  CHECK(b.sw->buffer().shared_used() == 0);
  CHECK(b.sw->buffer().group_shared(0, 3) == 0);
}

TEST_CASE("watchdog: forward transmits ignoring pause, then obeys pause again and re-detects",
          "[pfc][watchdog]") {
  StarBench b(with_action("forward"));
  b.hosts[2]->storm(Time{}, milliseconds(1), microseconds(100), 3);
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send_at(Time{}, b.packet(0, 2, i));
  b.hosts[0]->send_at(microseconds(600), b.packet(0, 2, 10));
  b.sim.run(microseconds(1350));
  const Time frame = wire(roce::data_frame(4096, false));
  {
    const std::vector<ScriptedHost::Arrival> data = b.hosts[2]->of(PacketType::Data);
    REQUIRE(data.size() == 11);
    // Declared at 400 us, the queue sends at once, back to back, though the peer pauses it.
    for (uint32_t i = 0; i < 10; ++i) {
      CHECK(data[i].time == microseconds(400) + frame * (i + 1) + kDelay);
    }
    CHECK(data[10].time == microseconds(600) + frame + kDelay + frame + kDelay);
    CHECK(b.switch_port(2).watchdog_storms == 1);
    CHECK(b.switch_port(2).watchdog_drops == 0);
    CHECK(b.switch_port(2).drops == 0);
  }
  // Restored at 1200 us. A second storm from 1400 us pauses the queue again (a packet sent at
  // 1450 us waits) until the watchdog declares it once more, at the poll of 1800 us.
  b.hosts[2]->storm(microseconds(1400), milliseconds(3), microseconds(100), 3);
  b.hosts[0]->send_at(microseconds(1450), b.packet(0, 2, 11));
  b.sim.run(milliseconds(2));
  const std::vector<ScriptedHost::Arrival> data = b.hosts[2]->of(PacketType::Data);
  REQUIRE(data.size() == 12);
  CHECK(data[11].time == microseconds(1800) + frame + kDelay);
  CHECK(b.switch_port(2).watchdog_storms == 2);
}

TEST_CASE("watchdog: off, a stuck peer holds the queue for as long as it pauses",
          "[pfc][watchdog]") {
  StarBench b(nlohmann::json::object());
  b.hosts[2]->storm(Time{}, milliseconds(1), microseconds(100), 3);
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send_at(Time{}, b.packet(0, 2, i));
  b.sim.run(milliseconds(2));
  const std::vector<ScriptedHost::Arrival> data = b.hosts[2]->of(PacketType::Data);
  REQUIRE(data.size() == 10);
  // The last XOFF, sent at 900 us, arrives at 901 us + 84 B and lasts 65535 quanta.
  const Time last_xoff = microseconds(900) + wire(pfc::kFrameBytes) + kDelay;
  const Time expiry = last_xoff + pfc::pause_duration(pfc::kMaxQuanta, parse_rate("100Gbps"));
  CHECK(data[0].time == expiry + wire(roce::data_frame(4096, false)) + kDelay);
  CHECK(b.switch_port(2).watchdog_storms == 0);
}

namespace {

// A HostNic whose link ends at a scripted host (the switch side).
struct NicBench {
  PacketPool pool;
  Simulator sim{1};
  HostNic* nic = nullptr;
  ScriptedHost* peer = nullptr;

  explicit NicBench(const nlohmann::json& watchdog) {
    NicConfig c = HostNic::read_config({});
    c.ack_timeout = microseconds(1000);
    for (int d = 0; d < 64; ++d) c.dscp_to_priority[d] = static_cast<uint8_t>(d >> 3);
    c.pfc = true;
    c.lossless[3] = true;
    c.pause_quanta = pfc::kMaxQuanta;
    c.auto_refresh = true;
    c.watchdog =
        read_switch_config({{"fabric", {{"pfc", {{"watchdog", watchdog}}}}}}, 4174).watchdog;
    auto n = std::make_unique<HostNic>("nic", pool, 0, c);
    nic = n.get();
    const ComponentId nic_id = sim.add(std::move(n));
    auto p = std::make_unique<ScriptedHost>("peer", pool);
    peer = p.get();
    const ComponentId peer_id = sim.add(std::move(p));
    for (NetworkNode* node : {static_cast<NetworkNode*>(nic), static_cast<NetworkNode*>(peer)}) {
      node->ports().resize(1);
      EgressPort& port = node->ports()[0];
      port.set_rate(parse_rate("100Gbps"));
      port.delay = kDelay;
      port.peer = node == nic ? peer_id : nic_id;
    }
    // 100 KB on DSCP 26 (lossless priority 3) from 10 us: 25 packets.
    const uint32_t qp = nic->add_send_qp({0, 0, 1, Bytes{100'000}, microseconds(10), 26});
    nic->connect_send_qp(qp, 0);
    nic->begin();
  }
  const PriorityCounters& counters() const { return nic->ports()[0].counters[3]; }
};

}  // namespace

TEST_CASE("watchdog on the NIC: its paused send queue is a storm too, drop and forward",
          "[pfc][watchdog][nic]") {
  SECTION("drop: the packets are discarded at line rate and retransmitted after restoration") {
    NicBench b(with_action("drop"));
    b.peer->storm(Time{}, milliseconds(1), microseconds(100), 3);
    b.sim.run(microseconds(2200));  // the peer never acknowledges: before a second timeout
    CHECK(b.counters().watchdog_storms == 1);
    CHECK(b.counters().watchdog_drops == 25);  // the whole message, once the storm is declared
    const std::vector<ScriptedHost::Arrival> data = b.peer->of(PacketType::Data);
    // Restored at 1200 us; go-back-N after the ACK timeout resends all 25 packets.
    REQUIRE(data.size() == 25);
    CHECK(data[0].time > microseconds(1200));
    CHECK(data[0].psn == 0);
  }
  SECTION("forward: the NIC sends through the pause once the storm is declared") {
    NicBench b(with_action("forward"));
    b.peer->storm(Time{}, milliseconds(1), microseconds(100), 3);
    b.sim.run(microseconds(1300));
    CHECK(b.counters().watchdog_storms == 1);
    CHECK(b.counters().watchdog_drops == 0);
    const std::vector<ScriptedHost::Arrival> data = b.peer->of(PacketType::Data);
    REQUIRE(data.size() == 25);
    CHECK(data[0].time == microseconds(400) + wire(roce::data_frame(4096, true)) + kDelay);
  }
  SECTION("off (nics = false leaves it to the switches): paused until the storm ends") {
    nlohmann::json w = kWatchdog200us;
    w["nics"] = false;
    ScenarioDocument doc;
    doc.root = {{"fabric", {{"pfc", {{"watchdog", w}}}}}};
    CHECK_FALSE(FabricSpec::resolve(doc).nic.watchdog.enabled);
    CHECK(FabricSpec::resolve(doc).switches.watchdog.enabled);
  }
}

namespace {

// Two leaves under one spine, hosts 0 and 1 on leaf0, 2 and 3 on leaf1. Host 0 writes 2 MB to
// host 3, whose NIC stalls from 0 to 2 ms, and 1 MB to host 2 (the victim of the pause tree:
// the same NIC, priority and uplink); host 1 writes 4 MB to host 2 from 500 us. The scenario
// of validate/pfc_watchdog_recovery.json.
RunResult run_stalled(const nlohmann::json& watchdog, int threads = 1) {
  return run_scenario(load_scenario(std::filesystem::path(FABTWIN_SOURCE_DIR) /
                                        "scenarios/lossless/pfc_watchdog_storm.json",
                                    {"fabric.pfc.watchdog=" + watchdog.dump()}),
                      threads);
}

}  // namespace

TEST_CASE(
    "watchdog in a run: a stalled receiver's storm is cut at its root, the victims "
    "recover, the same for 1 and 2 threads",
    "[pfc][watchdog][run]") {
  const RunResult stuck = run_stalled({{"enabled", false}});
  nlohmann::json watchdog = {{"enabled", true},
                             {"detection_time", "100us"},
                             {"poll_interval", "10us"},
                             {"restoration_time", "500us"},
                             {"nics", false}};
  const RunResult saved = run_stalled(watchdog);
  for (const RunResult* r : {&stuck, &saved}) {
    for (const FlowRecord& f : r->flows) CHECK(f.completed);
  }
  // Without the watchdog the pause tree holds both victims until the stall ends at 2 ms.
  CHECK(stuck.flows[1].finish > milliseconds(2));
  CHECK(stuck.flows[2].finish > milliseconds(2));
  CHECK(testing::port_record(stuck, "leaf1", "host3").total(&PriorityCounters::watchdog_storms) ==
        0);
  // With it, the queue to host 3 (paused from about 6 us) is declared at the poll of 110 us,
  // before any queue up the tree has been paused 100 us; dropping there drains the tree.
  const PortRecord& root = testing::port_record(saved, "leaf1", "host3");
  CHECK(root.total(&PriorityCounters::watchdog_storms) == 1);
  CHECK(root.total(&PriorityCounters::watchdog_drops) > 0);
  CHECK(saved.flows[1].finish < microseconds(400));
  CHECK(saved.flows[2].goodput_bps() > 0.95 * 98.04e9);
  // What it costs: the stalled receiver's flow lost those packets and resent them.
  CHECK(saved.flows[0].packets_retransmitted >= root.total(&PriorityCounters::watchdog_drops));
  CHECK(saved.flows[0].finish > stuck.flows[0].finish);
  int64_t other_drops = 0, storms = 0;
  for (const PortRecord& p : saved.ports) {
    if (&p != &root) other_drops += p.drops();
    storms += p.total(&PriorityCounters::watchdog_storms);
  }
  CHECK(other_drops == 0);
  CHECK(storms == 1);

  // Deterministic for any thread count, NICs' watchdogs included.
  watchdog["nics"] = true;
  const RunResult one = run_stalled(watchdog, 1);
  const RunResult two = run_stalled(watchdog, 2);
  REQUIRE(two.partitions > 1);
  CHECK(one.fingerprint == two.fingerprint);
  REQUIRE(one.ports.size() == two.ports.size());
  for (size_t i = 0; i < one.ports.size(); ++i) {
    for (int p = 0; p < kPriorities; ++p) {
      const PriorityCounters &a = one.ports[i].counters[p], &b = two.ports[i].counters[p];
      CHECK(a.watchdog_storms == b.watchdog_storms);
      CHECK(a.watchdog_drops == b.watchdog_drops);
      CHECK(a.tx_packets == b.tx_packets);
      CHECK(a.pause_sent == b.pause_sent);
    }
  }
  for (size_t f = 0; f < one.flows.size(); ++f) CHECK(one.flows[f].finish == two.flows[f].finish);
}

// Defect 1: the NIC re-sent its XOFF every half pause time whatever
// fabric.pfc.refresh_interval said (at pause_quanta 1, every 2.56 ns).
TEST_CASE("pfc defect: the NIC refreshes its XOFF every fabric.pfc.refresh_interval",
          "[pfc][defect]") {
  // Host 0 writes to host 1, whose NIC stalls from 0 to 1 ms: it XOFFs the switch once its
  // receive buffer reaches rx_xoff and keeps it paused until the stall ends.
  nlohmann::json s = {
      {"topology", {{"type", "star"}, {"hosts", 2}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}, {"pfc", {}}}},
      {"nic", {{"rx_stall", {{"hosts", {1}}, {"start", "0us"}, {"end", "1ms"}}}}},
      {"traffic",
       {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "1MB"}, {"dscp", 26}}}}}}},
      {"run", {{"end", "1ms"}}}};
  SECTION("the default pause time, refreshed every 20 us") {
    s["fabric"]["pfc"]["refresh_interval"] = "20us";
    const RunResult r = run_scenario(s);
    const PortRecord& nic = testing::port_record(r, "host1", "switch");
    // One pause episode from about 6 us to 1 ms: an XOFF at its start and one per 20 us
    // after; before the fix one per 167.8 us (half of 65535 quanta at 100 Gb/s).
    CHECK(nic.total(&PriorityCounters::xoff_transitions) == 1);
    CHECK(nic.total(&PriorityCounters::pause_sent) >= 49);
    CHECK(nic.total(&PriorityCounters::pause_sent) <= 51);
  }
  SECTION("pause_quanta 1 (5.12 ns) with a 10 us refresh: the run stays small") {
    s["fabric"]["pfc"]["pause_quanta"] = 1;
    s["fabric"]["pfc"]["refresh_interval"] = "10us";
    const RunResult r = run_scenario(s);
    const PortRecord& nic = testing::port_record(r, "host1", "switch");
    const PortRecord& to_nic = testing::port_record(r, "switch", "host1");
    // Refreshes every 10 us, plus a re-sent XOFF for each frame that arrives after the last
    // one ran out (the pause lasts 5.12 ns, so nearly every frame): never one per 2.56 ns
    // (390,625 in 1 ms), as before the fix.
    const int64_t refreshes = milliseconds(1).ps / microseconds(10).ps;
    CHECK(nic.total(&PriorityCounters::pause_sent) <=
          refreshes + 1 + to_nic.total(&PriorityCounters::tx_packets));
    CHECK(r.events < 100'000);
  }
}

// Defect 2: once an XOFF ran out unrefreshed (a refresh interval longer than the pause time),
// the switch sent no new one while its ingress stayed over the threshold, until the refresh
// timer fired, and the peer's frames overflowed the headroom.
TEST_CASE("pfc defect: an XOFF that ran out is re-sent while the ingress is over XOFF",
          "[pfc][defect]") {
  // A 2:1 incast on lossless priority 3; each XOFF lasts 200 quanta (1.024 us), less than the
  // group takes to drain to XON, and is refreshed only every 100 us. Before the fix: 27,129
  // frames lost to headroom overflow, 54,258 retransmitted.
  const nlohmann::json s = {
      {"topology", {{"type", "star"}, {"hosts", 3}}},
      {"fabric",
       {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}},
        {"switch", {{"buffer", "2MB"}}},
        {"ecn", {{"enabled", false}}},
        {"pfc", {{"pause_quanta", 200}, {"refresh_interval", "100us"}}}}},
      {"nic", {{"ack_timeout", "200us"}}},
      {"traffic", {{{"type", "incast"}, {"receiver", 0}, {"size", "2MB"}, {"dscp", 26}}}},
      {"run", {{"end", "10ms"}}}};
  const RunResult r = run_scenario(s);
  int64_t headroom_drops = 0, xoff = 0;
  for (const PortRecord& p : r.ports) {
    headroom_drops += p.total(&PriorityCounters::drops_headroom);
    if (p.switch_port) xoff += p.total(&PriorityCounters::pause_sent);
  }
  CHECK(headroom_drops == 0);
  CHECK(xoff > 0);
  for (const FlowRecord& f : r.flows) {
    CHECK(f.completed);
    CHECK(f.packets_retransmitted == 0);
  }
}
