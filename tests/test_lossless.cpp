// Lossless Ethernet: pause-quantum arithmetic, headroom sizing, the MMU's thresholds and
// hysteresis, the dynamic-threshold steady state, RED marking statistics, and whole-fabric
// incasts with PFC.
#include <cmath>

#include "models/fabric/fabric.h"
#include "models/net/ecn_marking.h"
#include "models/net/egress_port.h"
#include "models/net/pfc.h"
#include "models/net/priority_flow_control.h"
#include "models/net/shared_buffer.h"
#include "sim/rng.h"
#include "test_support.h"

using namespace fabtwin;

TEST_CASE("a pause quantum is 512 bit times at the link's rate", "[pfc]") {
  CHECK(pfc::pause_duration(1, parse_rate("100Gbps")).ps == 5'120);
  CHECK(pfc::pause_duration(1, parse_rate("25Gbps")).ps == 20'480);
  CHECK(pfc::pause_duration(1, parse_rate("400Gbps")).ps == 1'280);
  // The largest pause, 65535 quanta (docs/references.md §2.1: 335.5 us, 1.342 ms, 83.9 us).
  CHECK(pfc::pause_duration(65535, parse_rate("100Gbps")).ps == 335'539'200);
  CHECK(pfc::pause_duration(65535, parse_rate("25Gbps")).ps == 1'342'156'800);
  CHECK(pfc::pause_duration(65535, parse_rate("400Gbps")).ps == 83'884'800);
  CHECK(pfc::pause_duration(0, parse_rate("100Gbps")).ps == 0);
}

TEST_CASE("automatic headroom follows the mlx5 driver's rule", "[pfc]") {
  // docs/references.md §2.2 worked examples; 7 m of fibre is 35 ns, 100 m is 500 ns.
  CHECK(pfc::mlx5_headroom(parse_rate("100Gbps"), parse_time("35ns"), 1500) == 35'680);
  CHECK(pfc::mlx5_headroom(parse_rate("100Gbps"), parse_time("500ns"), 9216) == 76'767);
  CHECK(pfc::mlx5_headroom(parse_rate("400Gbps"), parse_time("35ns"), 4200) == 137'824);
  // Speeds below 40 Gb/s are sized as 40 Gb/s.
  CHECK(pfc::mlx5_headroom(parse_rate("10Gbps"), parse_time("35ns"), 1500) ==
        pfc::mlx5_headroom(parse_rate("40Gbps"), parse_time("35ns"), 1500));
  // An absurd cable gives the largest headroom, never a wrapped small one (the buffer check
  // then refuses it).
  CHECK(pfc::mlx5_headroom(parse_rate("1Tbps"), Time{INT64_MAX}, 9216) == pfc::kMaxHeadroom);
  CHECK(pfc::mlx5_headroom(parse_rate("100Gbps"), parse_time("1000s"), 9216) == pfc::kMaxHeadroom);
}

namespace {
MmuConfig static_lossless(int64_t xoff, int64_t xon_offset) {
  MmuConfig c;
  c.buffer = 1'000'000;
  c.reserve = 0;
  c.dynamic = false;
  c.static_xoff = xoff;
  c.xon_offset = xon_offset;
  c.lossless[3] = true;
  return c;
}
}  // namespace

TEST_CASE("XOFF at the threshold, headroom beyond it, XON only below the hysteresis", "[mmu]") {
  SharedBuffer mmu(static_lossless(10'000, 3'000), {5'000, 5'000});
  for (int i = 0; i < 10; ++i) {
    CHECK_FALSE(mmu.should_pause(0, 3));
    REQUIRE(mmu.admit(0, 3, 1, 3, 1'000) == Admission::Admitted);
  }
  CHECK(mmu.group_shared(0, 3) == 10'000);
  CHECK(mmu.should_pause(0, 3));  // at the threshold: XOFF
  for (int i = 0; i < 5; ++i) REQUIRE(mmu.admit(0, 3, 1, 3, 1'000) == Admission::Admitted);
  CHECK(mmu.group_headroom(0, 3) == 5'000);
  CHECK(mmu.admit(0, 3, 1, 3, 1'000) == Admission::HeadroomOverflow);
  CHECK(mmu.group_shared(1, 3) == 0);  // another ingress port is untouched
  // Draining: headroom empties first; XON waits until shared + 3 KB <= 10 KB.
  for (int i = 0; i < 5; ++i) mmu.release(0, 3, 1, 3, 1'000);
  CHECK(mmu.group_headroom(0, 3) == 0);
  CHECK(mmu.group_shared(0, 3) == 10'000);
  CHECK_FALSE(mmu.should_resume(0, 3));
  mmu.release(0, 3, 1, 3, 1'000);
  mmu.release(0, 3, 1, 3, 1'000);
  CHECK_FALSE(mmu.should_resume(0, 3));  // 8 KB + 3 KB > 10 KB
  mmu.release(0, 3, 1, 3, 1'000);
  CHECK(mmu.should_resume(0, 3));  // 7 KB + 3 KB <= 10 KB
  for (int i = 0; i < 7; ++i) mmu.release(0, 3, 1, 3, 1'000);
  CHECK(mmu.used() == 0);
  CHECK(mmu.shared_used() == 0);
}

TEST_CASE("reserved bytes come before the shared pool", "[mmu]") {
  MmuConfig c = static_lossless(10'000, 0);
  c.reserve = 4'000;
  SharedBuffer mmu(c, {0, 0});
  for (int i = 0; i < 4; ++i) mmu.admit(0, 3, 1, 3, 1'000);
  CHECK(mmu.group_shared(0, 3) == 0);
  CHECK(mmu.shared_used() == 0);
  mmu.admit(0, 3, 1, 3, 1'000);
  CHECK(mmu.group_shared(0, 3) == 1'000);
  CHECK(mmu.shared_pool() == 1'000'000 - 2 * 8 * 4'000);
}

TEST_CASE("N congested queues settle at the dynamic threshold's alpha B / (1 + alpha N)", "[mmu]") {
  for (const double alpha : {0.5, 1.0, 2.0, 8.0}) {
    for (const int n : {1, 2, 4, 8}) {
      MmuConfig c;
      c.buffer = 4'000'000;
      c.egress_alpha = alpha;  // lossy queues, limited at egress
      SharedBuffer mmu(c, std::vector<int64_t>(static_cast<size_t>(n) + 1, 0));
      // Every queue keeps offering 1 KB frames until none is admitted any more.
      std::vector<int64_t> queue(n, 0);
      for (bool progress = true; progress;) {
        progress = false;
        for (int q = 0; q < n; ++q) {
          if (mmu.admit(n, 0, q, 0, 1'000) == Admission::Admitted) {
            queue[q] += 1'000;
            progress = true;
          }
        }
      }
      const double expected = alpha * 4e6 / (1 + alpha * n);
      INFO("alpha " << alpha << ", N " << n);
      for (int64_t q : queue)
        CHECK(static_cast<double>(q) == Approx(expected).margin(1'000 * (1 + alpha)));
    }
  }
}

TEST_CASE("a lossy group's egress limit counts the lossless frames of the queue it enters",
          "[mmu]") {
  // Priority 3 lossless, 0 lossy, egress alpha 1: a lossy group's frames are admitted to a
  // queue while its bytes stay below the free shared pool. 300 KB of lossless priority-3 frames
  // wait in queue 3 of port 1, then lossy priority-0 frames arrive for the same queue, which
  // only a switch that rewrites priorities can send there.
  MmuConfig c;
  c.buffer = 1'000'000;
  c.lossless[3] = true;
  const auto lossy_admitted = [&](bool rewrites) {
    SharedBuffer mmu(c, {0, 0, 0}, rewrites);
    for (int i = 0; i < 300; ++i) REQUIRE(mmu.admit(0, 3, 1, 3, 1'000) == Admission::Admitted);
    int64_t admitted = 0;
    while (mmu.admit(2, 0, 1, 3, 1'000) == Admission::Admitted) admitted += 1'000;
    return admitted;
  };
  // Told that its switch rewrites priorities, the buffer counts every frame of queue 3:
  // 300 KB + q < 700 KB - q stops at 200 KB. Told that it keeps them, it leaves a lossless
  // queue uncounted (no lossy frame can enter it), and the same calls go on until the shared
  // pool is full.
  CHECK(lossy_admitted(true) == 200'000);
  CHECK(lossy_admitted(false) == 700'000);
}

TEST_CASE("RED marks with probability 0 below Kmin, linear to Pmax, 1 at Kmax", "[ecn]") {
  const RedMarking red{5'000, 200'000, 0.01};
  CHECK(red.probability(5'000) == 0.0);
  CHECK(red.probability(102'500) == Approx(0.005));
  CHECK(red.probability(199'999) == Approx(0.01).epsilon(1e-4));
  CHECK(red.probability(200'000) == 1.0);
  // At a held queue depth the marked fraction matches the probability within 4 sigma.
  const RedMarking steep{10'000, 110'000, 0.5};
  Rng rng(3, 3);
  for (const int64_t depth : {20'000, 60'000, 100'000}) {
    const double p = steep.probability(depth);
    const int trials = 200'000;
    int marked = 0;
    for (int i = 0; i < trials; ++i) marked += steep.should_mark(depth, rng);
    const double sigma = std::sqrt(p * (1 - p) / trials);
    CHECK(std::abs(static_cast<double>(marked) / trials - p) < 4 * sigma);
  }
}

TEST_CASE("an egress port marks above Kmin only where ECN is on, and serves PFC frames in order",
          "[ecn][pfc]") {
  EgressPort port;
  const RedMarking red{5'000, 200'000, 0.01};
  port.set_marking(false, red);
  CHECK_FALSE(port.may_mark(INT64_MAX - 1));  // no queue depth marks
  CHECK(port.red() == red);
  port.set_marking(true, red);
  CHECK_FALSE(port.may_mark(5'000));
  CHECK(port.may_mark(5'001));

  CHECK_FALSE(port.pause_waiting());
  port.queue_pause(3, 0xFFFF);
  port.queue_pause(5, 0);
  CHECK(port.pause_waiting());
  CHECK(port.take_pause() == std::pair<uint8_t, uint16_t>{3, 0xFFFF});
  CHECK(port.pause_waiting());
  CHECK(port.take_pause() == std::pair<uint8_t, uint16_t>{5, 0});
  CHECK_FALSE(port.pause_waiting());
  port.queue_pause(3, 0xFFFF);
  port.drop_pauses();
  CHECK_FALSE(port.pause_waiting());
}

TEST_CASE("each port's PFC sender pauses, lapses and refreshes on its own", "[pfc]") {
  PauseSenders senders;
  senders.add(0xFFFF, Time{100'000}, Time{335'539'200});
  senders.add(1'000, Time{2'000'000}, Time{1'000'000});
  REQUIRE(senders.size() == 2);
  EgressPort p0, p1;

  senders.start(1, p1, 3);
  CHECK(senders.pausing(1, 3));
  CHECK_FALSE(senders.pausing(0, 3));  // port 0 is untouched
  CHECK_FALSE(senders.pausing(1, 2));
  CHECK(p1.counters[3].xoff_transitions == 1);
  CHECK(p0.counters[3].xoff_transitions == 0);
  // The first XOFF starts port 1's refresh timer; the next waits for it to fire.
  CHECK(senders.send(1, p1, 3, true, Time{0}));
  CHECK_FALSE(senders.send(1, p1, 3, true, Time{500'000}));
  CHECK(p1.take_pause() == std::pair<uint8_t, uint16_t>{3, 1'000});
  CHECK(p1.counters[3].pause_sent == 2);
  // The last XOFF, sent at 0.5 us, runs out at the peer 1 us later.
  CHECK_FALSE(senders.lapsed(1, 3, Time{1'499'999}));
  CHECK(senders.lapsed(1, 3, Time{1'500'000}));
  CHECK(senders.refresh_interval(1).ps == 2'000'000);
  // Port 0's timer is its own.
  senders.start(0, p0, 3);
  CHECK(senders.send(0, p0, 3, true, Time{0}));
  senders.refresh_fired(1);
  CHECK(senders.send(1, p1, 3, true, Time{2'000'000}));
  CHECK_FALSE(senders.send(0, p0, 3, true, Time{2'000'000}));
  // XON: the bit clears and the frame carries no quanta; no timer starts.
  senders.stop(1, 3);
  CHECK_FALSE(senders.pausing(1, 3));
  CHECK(senders.pausing(0, 3));
  CHECK_FALSE(senders.send(1, p1, 3, false, Time{2'100'000}));
  CHECK(p1.counters[3].xon_sent == 1);
}

namespace {
RunResult run_scenario(const nlohmann::json& scenario) {
  Fabric fabric(testing::inline_document(scenario));
  return fabric.run();
}

nlohmann::json incast_16(const nlohmann::json& traffic, const std::string& buffer) {
  return {{"topology", {{"type", "star"}, {"hosts", 17}}},
          {"fabric",
           {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}, {"switch", {{"buffer", buffer}}}}},
          {"nic", {{"ack_timeout", "200us"}}},
          {"traffic", traffic},
          {"run", {{"end", "1s"}}}};
}
}  // namespace

TEST_CASE("a 16:1 incast with sized headroom loses nothing, a lossy class drops", "[pfc][run]") {
  const nlohmann::json lossless = {{{"type", "incast"}, {"receiver", 0}, {"size", "1MB"}}};
  const RunResult r = run_scenario(incast_16(lossless, "2MB"));
  int64_t drops = 0, xoff = 0, paused_hosts = 0, retx = 0;
  for (const PortRecord& p : r.ports) {
    drops += p.drops();
    xoff += p.total(&PriorityCounters::pause_sent);
    if (!p.switch_port && p.total(&PriorityCounters::pause_received) > 0) ++paused_hosts;
  }
  for (const FlowRecord& f : r.flows) {
    CHECK(f.completed);
    retx += f.packets_retransmitted;
  }
  CHECK(drops == 0);
  CHECK(retx == 0);
  CHECK(xoff > 0);
  CHECK(paused_hosts == 16);  // every sender was paused
  CHECK(r.buffers.at(0).max_used <= r.buffers.at(0).buffer);

  nlohmann::json lossy = lossless;
  lossy[0]["dscp"] = 8;  // priority 1: not lossless
  const RunResult l = run_scenario(incast_16(lossy, "2MB"));
  int64_t lossy_drops = 0, lossy_xoff = 0;
  for (const PortRecord& p : l.ports) {
    lossy_drops += p.total(&PriorityCounters::drops_egress);
    lossy_xoff += p.total(&PriorityCounters::pause_sent);
  }
  CHECK(lossy_drops > 0);
  CHECK(lossy_xoff == 0);
  for (const FlowRecord& f : l.flows) CHECK(f.completed);  // go-back-N recovers
}

TEST_CASE("too little headroom overflows and is counted at the ingress", "[pfc][run]") {
  nlohmann::json s = incast_16({{{"type", "incast"}, {"receiver", 0}, {"size", "1MB"}}}, "2MB");
  s["fabric"]["switch"]["headroom"] = "2KB";
  const RunResult r = run_scenario(s);
  int64_t overflow = 0;
  for (const PortRecord& p : r.ports) {
    overflow += p.total(&PriorityCounters::drops_headroom);
    if (p.total(&PriorityCounters::drops_headroom) > 0) CHECK(p.peer != "host0");  // senders' ports
  }
  CHECK(overflow > 0);
  CHECK(r.buffers.at(0).headroom_overflows == overflow);
}

TEST_CASE("ECN marks appear only when a queue passes Kmin", "[ecn][run]") {
  const nlohmann::json traffic = {
      {{"type", "incast"}, {"receiver", 0}, {"senders", 4}, {"size", "1MB"}}};
  nlohmann::json s = incast_16(traffic, "32MB");
  s["fabric"]["ecn"] = {{"kmin", "40MB"}, {"kmax", "50MB"}};  // never reached
  int64_t marks = 0;
  for (const PortRecord& p : run_scenario(s).ports) marks += p.total(&PriorityCounters::ecn_marks);
  CHECK(marks == 0);
  s["fabric"]["ecn"] = {{"kmin", "10KB"}, {"kmax", "20KB"}, {"pmax", 0.5}};
  int64_t packets = 0;
  marks = 0;
  for (const PortRecord& p : run_scenario(s).ports) {
    marks += p.total(&PriorityCounters::ecn_marks);
    if (p.switch_port) packets += p.tx_packets();
  }
  CHECK(marks > 0);
  CHECK(marks < packets);
  s["fabric"]["ecn"]["enabled"] = false;
  marks = 0;
  for (const PortRecord& p : run_scenario(s).ports) marks += p.total(&PriorityCounters::ecn_marks);
  CHECK(marks == 0);
}

TEST_CASE("each switch port marks by the RED curve of its own link rate (fabric.ecn.by_rate)",
          "[ecn][run]") {
  // Two leaves of four hosts at 100 Gb/s with one 200 Gb/s uplink each: every host of leaf 1
  // sends to one host of leaf 0, so queues build at leaf 1's uplink (200 Gb/s, fed at 400) and at
  // leaf 0's port to the receiver (100 Gb/s, fed at 200). One rate's curve marks any queue, the
  // other's none: only the ports of the first rate mark.
  nlohmann::json s = {
      {"topology",
       {{"type", "leaf_spine"},
        {"leaves", 2},
        {"spines", 1},
        {"hosts_per_leaf", 4},
        {"uplink_rate", "200Gbps"}}},
      {"fabric",
       {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}, {"switch", {{"buffer", "32MB"}}}}},
      {"traffic", nlohmann::json::array()},
      {"run", {{"end", "1s"}}}};
  for (int src = 4; src < 8; ++src) {
    s["traffic"].push_back(
        {{"type", "flows"}, {"flows", {{{"src", src}, {"dst", 0}, {"size", "1MB"}}}}});
  }
  const nlohmann::json always = {{"kmin", "1B"}, {"kmax", "2B"}, {"pmax", 1.0}};
  const nlohmann::json never = {{"kmin", "30MB"}, {"kmax", "31MB"}, {"pmax", 1.0}};
  for (const std::string marking : {"100Gbps", "200Gbps"}) {
    INFO("marking at " << marking);
    const std::string other = marking == "100Gbps" ? "200Gbps" : "100Gbps";
    s["fabric"]["ecn"] = {{"by_rate", {{marking, always}, {other, never}}}};
    int queued_at_rate = 0;
    for (const PortRecord& p : run_scenario(s).ports) {
      if (!p.switch_port) continue;
      INFO("port to " << p.peer);
      const int64_t marks = p.total(&PriorityCounters::ecn_marks);
      if (p.rate != parse_rate(marking)) {
        CHECK(marks == 0);
      } else if (p.max_queue_bytes() > 10'000) {  // a queue of frames built here: it marked
        ++queued_at_rate;
        CHECK(marks > 0);
      }
    }
    CHECK(queued_at_rate > 0);
  }
}

TEST_CASE("a receiver that drains slower than its link pauses the switch, losslessly",
          "[pfc][run]") {
  nlohmann::json s = incast_16(
      {{{"type", "flows"}, {"flows", {{{"src", 1}, {"dst", 0}, {"size", "20MB"}}}}}}, "4MB");
  s["nic"]["rx_drain_rate"] = "50Gbps";
  const RunResult r = run_scenario(s);
  REQUIRE(r.flows.at(0).completed);
  int64_t drops = 0, nic_xoff = 0, switch_xoff = 0;
  for (const PortRecord& p : r.ports) {
    drops += p.drops();
    (p.switch_port ? switch_xoff : nic_xoff) += p.total(&PriorityCounters::pause_sent);
  }
  CHECK(drops == 0);
  CHECK(nic_xoff > 0);     // host 0 paused the switch
  CHECK(switch_xoff > 0);  // which, filling up, paused host 1
  // The flow runs at the receiver's drain rate (frames of 4158 B for 4096 B of payload).
  CHECK(r.flows[0].goodput_bps() == Approx(50e9 * 4096 / (4096 + 62 + 20)).epsilon(0.02));
}
