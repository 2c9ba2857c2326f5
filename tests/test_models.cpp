// Models driven alone: the switch between scripted hosts, routing tables, topology builders,
// traffic generators and flow-size distributions.
#include <deque>
#include <map>
#include <set>
#include "star_bench.h"
#include "test_support.h"

#include "models/fabric/topology.h"
#include "models/net/pfc.h"
#include "models/net/routing.h"
#include "models/net/switch.h"
#include "models/traffic/flow_size_cdf.h"
#include "models/traffic/traffic.h"

using namespace fabtwin;

namespace {

// A scripted host: sends the packets it is given back to back and records what arrives.
class ScriptedHost final : public NetworkNode {
 public:
  ScriptedHost(std::string name, PacketPool& pool) : NetworkNode(std::move(name), pool) {}
  struct Arrival {
    Time time;
    uint32_t psn;
    int priority;
    Ecn ecn;
  };
  std::vector<Arrival> arrivals;
  std::vector<Arrival> pause_frames;  // psn = pause quanta

  void send(Packet* p) {
    ports_[0].enqueue(p);
    if (port_free(0)) {
      on_transmit_done(0);
    } else {
      request_transmit_done(0);
    }
  }

 protected:
  void on_arrival(uint32_t, Packet* p) override {
    if (p->type == PacketType::Pause) {  // honour it, as a NIC does
      pause_frames.push_back({now(), p->pause_quanta(), p->priority, p->ecn});
      const Time d = pfc::pause_duration(p->pause_quanta(), ports_[0].rate);
      ports_[0].pause(p->priority, now(), d);
      schedule_self(d.ps > 0 ? ports_[0].queues[p->priority].paused_until : now(),
                    kFirstModelHandler, 0);
    } else {
      arrivals.push_back({now(), p->psn, p->priority, p->ecn});
    }
    pool().release(p);
  }
  void on_transmit_done(uint32_t port) override {
    if (!port_free(0)) return;
    const int prio = ports_[0].select(now());
    if (prio < 0) return;
    transmit_queued(port, prio);
    if (ports_[0].has_backlog()) request_transmit_done(0);
  }
  void on_timer(const Event&) override { on_transmit_done(0); }
};

// The star bench with this file's scripted hosts.
struct StarBench : testing::StarBench<ScriptedHost> {
  static SwitchConfig config_with(const nlohmann::json& fabric) {
    return read_switch_config({{"fabric", fabric}}, roce::data_frame(4096, true));
  }

  explicit StarBench(Bytes buffer)
      : StarBench(config_with({{"switch", {{"buffer", format_bytes(buffer)}}}})) {}
  explicit StarBench(const SwitchConfig& config) : testing::StarBench<ScriptedHost>(config) {}

  // A data packet of `priority`, carrying DSCP 8 x priority (the default map gives it back).
  Packet* packet(int src, int dst, uint32_t psn, int payload, int priority = 3) {
    Packet* p = pool.acquire();
    p->dscp = static_cast<uint8_t>(8 * priority);
    p->ecn = Ecn::Ect0;
    p->src_host = src;
    p->dst_host = dst;
    p->psn = psn;
    p->payload = payload;
    p->frame = roce::data_frame(payload, false);
    p->priority = static_cast<uint8_t>(priority);
    return p;
  }
};

}  // namespace

TEST_CASE("a switch stores and forwards: two wire times and two propagation delays", "[switch]") {
  StarBench b(Bytes{1'000'000});
  b.hosts[0]->send(b.packet(0, 1, 0, 1000));
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 1);
  const Time wire = roce::wire_time(roce::data_frame(1000, false), parse_rate("100Gbps"));
  CHECK(b.hosts[1]->arrivals[0].time == (wire + parse_time("1us")) * 2);
  CHECK(b.hosts[2]->arrivals.empty());
}

TEST_CASE("back-to-back frames leave the switch one wire time apart", "[switch]") {
  StarBench b(Bytes{1'000'000});
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send(b.packet(0, 1, i, 4096));
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 10);
  const Time wire = roce::wire_time(roce::data_frame(4096, false), parse_rate("100Gbps"));
  for (size_t i = 1; i < 10; ++i) {
    CHECK(b.hosts[1]->arrivals[i].time - b.hosts[1]->arrivals[i - 1].time == wire);
    CHECK(b.hosts[1]->arrivals[i].psn == i);
  }
}

TEST_CASE("a lossy queue past its egress threshold drops and counts it at the egress", "[switch]") {
  const int frame = roce::data_frame(1000, false);
  // No reserve, alpha 1: one congested queue may hold half the free buffer, about 10 frames.
  StarBench b(StarBench::config_with(
      {{"switch",
        {{"buffer", std::to_string(20 * frame) + "B"}, {"reserve", "0B"}, {"egress_alpha", "1"}}},
       {"pfc", {{"enabled", false}}}}));
  for (uint32_t i = 0; i < 30; ++i) {
    b.hosts[0]->send(b.packet(0, 1, i, 1000, 1));
    b.hosts[2]->send(b.packet(2, 1, 100 + i, 1000, 1));
  }
  b.sim.run(parse_time("1ms"));
  const auto& c = b.sw->ports()[1].counters[1];  // switch port 1 faces host1
  const int64_t received = static_cast<int64_t>(b.hosts[1]->arrivals.size());
  CHECK(c.drops > 0);
  CHECK(c.drops == c.drops_egress);
  CHECK(received + c.drops == 60);
  CHECK(c.drop_bytes == c.drops * frame);
  CHECK(b.sw->buffer().max_used() <= 20 * frame / 2 + 2 * frame);
  CHECK(b.sw->buffer().used() == 0);
  CHECK(b.pool.in_use() == 0);  // every packet came back to the pool
}

TEST_CASE("a queue above Kmax marks its ECN-capable frames and only those", "[switch][ecn]") {
  // Two senders at line rate into one egress: the queue grows past Kmax = 2 frames, where RED
  // marks every frame it serves (at dequeue), unless the frame is Not-ECT. Whether a frame is
  // ECN-capable is taken from its queue entry, not read from the packet.
  StarBench b(StarBench::config_with(
      {{"switch", {{"buffer", "1MB"}}}, {"ecn", {{"kmin", "1KB"}, {"kmax", "2KB"}}}}));
  for (uint32_t i = 0; i < 20; ++i) {
    for (int src : {0, 2}) {
      Packet* p = b.packet(src, 1, static_cast<uint32_t>(100 * src) + i, 1000);
      if (i % 2 == 1) p->ecn = Ecn::NotEct;
      b.hosts[src]->send(p);
    }
  }
  b.sim.run(parse_time("1ms"));
  const auto& arrivals = b.hosts[1]->arrivals;
  REQUIRE(arrivals.size() == 40);
  int ce = 0;
  int ect_late = 0;  // ECN-capable frames that arrived after the queue had passed Kmax
  for (size_t k = 0; k < arrivals.size(); ++k) {
    const bool ect = arrivals[k].psn % 2 == 0;
    if (!ect) CHECK(arrivals[k].ecn == Ecn::NotEct);
    if (arrivals[k].ecn == Ecn::Ce) ++ce;
    // Arrivals 8 to 35 (from 0) left a queue above Kmax behind them: it grows by a frame per
    // wire time while both senders send, and drains over the last few.
    if (ect && k >= 8 && k < 36) {
      CHECK(arrivals[k].ecn == Ecn::Ce);
      ++ect_late;
    }
  }
  CHECK(ect_late > 10);
  CHECK(b.sw->ports()[1].counters[3].ecn_marks == ce);
}

TEST_CASE("egress queues are served in strict priority", "[switch]") {
  StarBench b(Bytes{10'000'000});
  for (uint32_t i = 0; i < 8; ++i) b.hosts[0]->send(b.packet(0, 1, i, 4096, 1));
  b.sim.run(parse_time("2us"));  // host 0's backlog is queued at the switch by now
  for (uint32_t i = 0; i < 2; ++i) b.hosts[2]->send(b.packet(2, 1, 100 + i, 1000, 6));
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 10);
  std::vector<uint32_t> order;
  for (const auto& a : b.hosts[1]->arrivals) order.push_back(a.psn);
  // Frames already sent keep their place; the high-priority ones overtake the queued rest.
  const auto high = std::find(order.begin(), order.end(), 100u) - order.begin();
  CHECK(high < 7);
  CHECK(order[high + 1] == 101);
  CHECK(order.back() == 7);
  CHECK(b.hosts[1]->arrivals[high].priority == 6);
}

namespace {

// The star bench with `forwarding` and `port_to_port_latency` set on its switch.
StarBench forwarding_bench(const std::string& forwarding, Time latency) {
  return StarBench(
      StarBench::config_with({{"switch",
                               {{"buffer", "1MB"},
                                {"forwarding", forwarding},
                                {"port_to_port_latency", std::to_string(latency.ps) + "ps"}}}}));
}

// Host `h`'s link (both ends) at `rate`, the switch's buffer and PFC left as sized for 100 Gb/s.
void set_host_link_rate(StarBench& b, int h, BitsPerSec rate) {
  Link l = b.topology.links[static_cast<size_t>(h)];
  l.rate = rate;
  wire(l, b.sw->ports()[l.a_port], b.hosts[static_cast<size_t>(h)]->ports()[l.b_port]);
}

}  // namespace

TEST_CASE("store and forward with a port-to-port latency: the latency once per switch",
          "[switch][forwarding]") {
  const Time latency = nanoseconds(600);
  StarBench b = forwarding_bench("store_and_forward", latency);
  b.hosts[0]->send(b.packet(0, 1, 0, 1000));
  b.sim.run(nanoseconds(1500));  // the frame is in the switch's pipeline: its buffer holds it
  const int frame = roce::data_frame(1000, false);
  CHECK(b.sw->buffer().used() == frame);
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 1);
  const Time wire = roce::wire_time(frame, parse_rate("100Gbps"));
  CHECK(b.hosts[1]->arrivals[0].time == (wire + parse_time("1us")) * 2 + latency);
  CHECK(b.sw->buffer().used() == 0);
  CHECK(b.pool.in_use() == 0);
}

TEST_CASE("cut-through on an idle switch: one wire time, the propagation delays and the latency",
          "[switch][forwarding]") {
  const Time wire = roce::wire_time(roce::data_frame(1000, false), parse_rate("100Gbps"));
  REQUIRE(wire == Time{86'560});
  // Shorter than the frame's wire time (it starts before its last bit is in), longer (it
  // waits in the pipeline), and none at all.
  for (const Time latency : {nanoseconds(50), nanoseconds(600), Time{}}) {
    INFO(latency.ps << " ps");
    StarBench b = forwarding_bench("cut_through", latency);
    b.hosts[0]->send(b.packet(0, 1, 0, 1000));
    b.sim.run(parse_time("1ms"));
    REQUIRE(b.hosts[1]->arrivals.size() == 1);
    CHECK(b.hosts[1]->arrivals[0].time == wire + parse_time("1us") * 2 + latency);
    CHECK(b.sw->ports()[1].busy_time == wire);
    CHECK(b.sw->buffer().used() == 0);
  }
}

TEST_CASE("cut-through: back-to-back frames stream through one wire time apart",
          "[switch][forwarding]") {
  const Time latency = nanoseconds(50);
  StarBench b = forwarding_bench("cut_through", latency);
  for (uint32_t i = 0; i < 10; ++i) b.hosts[0]->send(b.packet(0, 1, i, 4096));
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 10);
  const Time wire = roce::wire_time(roce::data_frame(4096, false), parse_rate("100Gbps"));
  for (size_t i = 0; i < 10; ++i) {
    CHECK(b.hosts[1]->arrivals[i].time ==
          wire * static_cast<int64_t>(i + 1) + parse_time("1us") * 2 + latency);
  }
}

TEST_CASE("cut-through falls back to store and forward behind a busy egress",
          "[switch][forwarding]") {
  // A short and a long frame sent at once to one receiver: their first bits reach the switch
  // together. The short one's last bit is in first and it cuts through; the long one finds the
  // egress busy and leaves only once it is all in, latency after.
  const Time latency = nanoseconds(50);
  const Time d = parse_time("1us");
  StarBench b = forwarding_bench("cut_through", latency);
  b.hosts[0]->send(b.packet(0, 1, 0, 4096));
  b.hosts[2]->send(b.packet(2, 1, 1, 1000));
  b.sim.run(parse_time("1ms"));
  REQUIRE(b.hosts[1]->arrivals.size() == 2);
  const Time small = roce::wire_time(roce::data_frame(1000, false), parse_rate("100Gbps"));
  const Time large = roce::wire_time(roce::data_frame(4096, false), parse_rate("100Gbps"));
  CHECK(b.hosts[1]->arrivals[0].psn == 1);
  CHECK(b.hosts[1]->arrivals[0].time == small + d * 2 + latency);
  CHECK(b.hosts[1]->arrivals[1].psn == 0);
  CHECK(b.hosts[1]->arrivals[1].time == (large + d) * 2 + latency);
}

TEST_CASE("cut-through falls back to store and forward from a slower ingress",
          "[switch][forwarding]") {
  const Time latency = nanoseconds(50);
  const Time d = parse_time("1us");
  const int frame = roce::data_frame(1000, false);
  const Time out = roce::wire_time(frame, parse_rate("100Gbps"));
  {  // 25 Gb/s into 100 Gb/s: the egress would run dry; the frame waits for its last bit
    StarBench b = forwarding_bench("cut_through", latency);
    set_host_link_rate(b, 0, parse_rate("25Gbps"));
    b.hosts[0]->send(b.packet(0, 1, 0, 1000));
    b.sim.run(parse_time("1ms"));
    REQUIRE(b.hosts[1]->arrivals.size() == 1);
    const Time in = roce::wire_time(frame, parse_rate("25Gbps"));
    CHECK(b.hosts[1]->arrivals[0].time == in + d + latency + out + d);
  }
  {  // 400 Gb/s into 100 Gb/s: cut through, the last bit leaving long after it arrived
    StarBench b = forwarding_bench("cut_through", latency);
    set_host_link_rate(b, 0, parse_rate("400Gbps"));
    b.hosts[0]->send(b.packet(0, 1, 0, 1000));
    b.sim.run(parse_time("1ms"));
    REQUIRE(b.hosts[1]->arrivals.size() == 1);
    CHECK(b.hosts[1]->arrivals[0].time == d + latency + out + d);
  }
}

TEST_CASE("fabric.switch.forwarding and port_to_port_latency are checked", "[switch][forwarding]") {
  const SwitchConfig defaults = StarBench::config_with(nlohmann::json::object());
  CHECK_FALSE(defaults.cut_through);
  CHECK(defaults.port_to_port_latency == Time{});
  CHECK_THROWS_WITH(StarBench::config_with({{"switch", {{"forwarding", "wormhole"}}}}),
                    Catch::Contains("fabric.switch.forwarding"));
  CHECK_THROWS_WITH(StarBench::config_with({{"switch", {{"port_to_port_latency", "-1us"}}}}),
                    Catch::Contains("fabric.switch.port_to_port_latency"));
}

TEST_CASE("topology builders wire the published shapes", "[topology]") {
  const Topology ft = build_fat_tree(8, parse_rate("100Gbps"), parse_time("1us"));
  CHECK(ft.hosts == 128);
  CHECK(ft.nodes.size() == 128 + 80);  // 5k^2/4 switches
  CHECK(ft.links.size() == 3 * 128);   // k^3/4 links per tier
  for (const TopologyNode& n : ft.nodes) CHECK(n.ports == (n.kind == NodeKind::Host ? 1 : 8));

  const Topology ls =
      build_leaf_spine(4, 2, 8, parse_rate("100Gbps"), parse_rate("100Gbps"), parse_time("1us"));
  CHECK(ls.hosts == 32);
  CHECK(ls.links.size() == 32 + 8);
  CHECK(ls.oversubscription == Approx(4.0));
}

TEST_CASE("routing finds every equal-cost path and ECMP spreads flows over them", "[routing]") {
  const Topology ft = build_fat_tree(4, parse_rate("100Gbps"), parse_time("1us"));
  const RoutingTable rt(ft);
  // host 0 (pod 0) to host 15 (pod 3): edge has 2 uplinks, aggregation 2, core 1 down.
  const int edge0 = ft.hosts;  // first edge switch
  CHECK(rt.distance(0, 15) == 6);
  CHECK(rt.distance(0, 1) == 2);
  CHECK(rt.next_hops(edge0, 15).size() == 2);
  CHECK(rt.next_hops(edge0, 1).size() == 1);
  std::map<uint32_t, int> used;
  for (uint16_t sport = 0; sport < 4000; ++sport) {
    const auto hops = rt.next_hops(edge0, 15);
    ++used[hops[ecmp_pick(roce_flow_hash(0, 15, sport), 77, static_cast<uint32_t>(hops.size()))]];
  }
  REQUIRE(used.size() == 2);
  for (const auto& [port, n] : used) CHECK(n == Approx(2000).margin(200));
}

TEST_CASE("a host that cannot reach another is a scenario error", "[routing]") {
  Topology t;
  t.add_node(Tier::Host, "h0");
  t.add_node(Tier::Host, "h1");
  const int s0 = t.add_node(Tier::Leaf, "s0");
  const int s1 = t.add_node(Tier::Leaf, "s1");
  t.connect(s0, 0, parse_rate("100Gbps"), parse_time("1us"));
  t.connect(s1, 1, parse_rate("100Gbps"), parse_time("1us"));
  CHECK_THROWS_WITH(RoutingTable(t), Catch::Contains("h0 has no route to h1"));
}

namespace {
std::vector<FlowSpec> traffic(const std::string& generator, int hosts = 16, uint64_t seed = 1) {
  const nlohmann::json scenario = {
      {"traffic", nlohmann::json::array({nlohmann::json::parse(generator)})}};
  return generate_traffic(scenario, build_star(hosts, parse_rate("100Gbps"), parse_time("1us")),
                          seed, ".");
}
}  // namespace

TEST_CASE("traffic generators make the flows they promise", "[traffic]") {
  const auto perm = traffic(R"({"type": "permutation", "size": "1MB"})");
  REQUIRE(perm.size() == 16);
  std::set<int> dsts;
  for (const FlowSpec& f : perm) {
    CHECK(f.src != f.dst);
    dsts.insert(f.dst);
  }
  CHECK(dsts.size() == 16);  // a permutation: every host receives exactly once
  std::vector<int> dst1, dst2;
  for (const FlowSpec& f : perm) dst1.push_back(f.dst);
  for (const FlowSpec& f : traffic(R"({"type": "permutation", "size": "1MB"})", 16, 2))
    dst2.push_back(f.dst);
  CHECK(dst1 != dst2);  // another seed, another permutation

  const auto incast = traffic(
      R"({"type": "incast", "receiver": 5, "senders": 3, "size": "64KiB", "start": "2us"})");
  REQUIRE(incast.size() == 3);
  for (const FlowSpec& f : incast) {
    CHECK(f.dst == 5);
    CHECK(f.start == parse_time("2us"));
    CHECK(f.size.count == 65536);
  }
  CHECK(traffic(R"({"type": "all_to_all", "size": "1KB"})", 6).size() == 30);
  const auto listed = traffic(R"({"type": "incast", "senders": [3, 7], "size": "1KB"})");
  REQUIRE(listed.size() == 2);
  CHECK(listed[1].src == 7);
}

TEST_CASE("every traffic generator takes a verb, write by default", "[traffic][send]") {
  for (const std::string g :
       {R"({"type": "permutation", "size": "1MB")", R"({"type": "incast", "size": "1KB")",
        R"({"type": "all_to_all", "size": "1KB")",
        R"({"type": "flows", "flows": [{"src": 0, "dst": 1, "size": "1KB"}])",
        R"({"type": "poisson", "load": 0.5, "duration": "1ms")"}) {
    INFO(g);
    const auto writes = traffic(g + "}", 4);
    const auto sends = traffic(g + R"(, "verb": "send"})", 4);
    REQUIRE(!writes.empty());
    REQUIRE(writes.size() == sends.size());
    for (size_t i = 0; i < writes.size(); ++i) {
      CHECK(writes[i].verb == Verb::Write);
      CHECK(sends[i].verb == Verb::Send);
      CHECK(sends[i].dst == writes[i].dst);  // the verb changes nothing else
      CHECK(sends[i].size == writes[i].size);
    }
  }
  CHECK_THROWS_WITH(traffic(R"({"type": "incast", "size": "1KB", "verb": "read"})"),
                    Catch::Contains("traffic[0].verb") && Catch::Contains("read"));
}

TEST_CASE("Poisson arrivals offer the requested load", "[traffic]") {
  const auto flows =
      traffic(R"({"type": "poisson", "cdf": "websearch", "load": 0.5, "duration": "20ms"})", 16);
  double bytes = 0;
  for (const FlowSpec& f : flows) {
    bytes += static_cast<double>(f.size.count);
    CHECK(f.src != f.dst);
    CHECK(f.start < parse_time("20ms"));
  }
  // 16 hosts x 100 Gb/s x 0.5 load x 20 ms / 8 = 2 GB offered in all.
  const double expected = 16 * 100e9 * 0.5 * 0.020 / 8;
  CHECK(bytes == Approx(expected).epsilon(0.15));
}

TEST_CASE("Poisson arrivals are generated only within the run", "[traffic]") {
  // A long duration and a short run: the arrivals the run cannot reach are not made, and those
  // it reaches are the same as without the bound (the same random stream, cut short).
  const nlohmann::json scenario = {{"traffic", nlohmann::json::array({nlohmann::json::parse(
                                                   R"({"type": "poisson", "cdf": "websearch",
                                                       "load": 0.5, "duration": "10s"})")})}};
  const Topology star = build_star(16, parse_rate("100Gbps"), parse_time("1us"));
  const auto bounded = generate_traffic(scenario, star, 1, ".", parse_time("2ms"));
  nlohmann::json two_ms = scenario;
  two_ms["traffic"][0]["duration"] = "2ms";
  const auto whole = generate_traffic(two_ms, star, 1, ".");
  REQUIRE_FALSE(bounded.empty());
  REQUIRE(bounded.size() == whole.size());
  for (size_t i = 0; i < bounded.size(); ++i) {
    CHECK(bounded[i].start == whole[i].start);
    CHECK(bounded[i].size == whole[i].size);
  }
  // More arrivals than one run holds are refused up front, with the path and the count.
  nlohmann::json huge = scenario;
  huge["traffic"][0]["cdf"] = "google-rpc-2008";
  CHECK_THROWS_WITH(generate_traffic(huge, star, 1, ".", parse_time("100s")),
                    Catch::Contains("traffic[0].duration") &&
                        Catch::Contains("flows would arrive before the run ends"));
}

TEST_CASE("flow-size CDFs: mean, sampling, and bad files", "[traffic]") {
  const FlowSizeCdf cdf = FlowSizeCdf::load(shipped_cdf_dir() / "websearch.txt");
  Rng rng(1, 2);
  double sum = 0;
  const int n = 400'000;
  for (int i = 0; i < n; ++i) sum += static_cast<double>(cdf.sample(rng));
  CHECK(sum / n == Approx(cdf.mean()).epsilon(0.02));
  const FlowSizeCdf two = FlowSizeCdf::from_points({{0, 0}, {100, 50}, {300, 100}});
  CHECK(two.mean() == Approx(0.5 * 50 + 0.5 * 200));
  for (const char* name :
       {"websearch", "datamining", "fb-hadoop", "alistorage-2019", "google-rpc-2008"}) {
    CHECK_NOTHROW(FlowSizeCdf::load(shipped_cdf_dir() / (std::string(name) + ".txt")));
  }
  CHECK_THROWS_WITH(FlowSizeCdf::from_points({{0, 0}, {100, 60}, {50, 100}}),
                    Catch::Contains("must not decrease"));
  CHECK_THROWS_WITH(FlowSizeCdf::from_points({{0, 0}, {100, 60}}), Catch::Contains("100 percent"));
  // A mean of 0 would make Poisson arrivals infinitely frequent (the run never ended).
  CHECK_THROWS_WITH(FlowSizeCdf::from_points({{0, 50}, {0, 100}}), Catch::Contains("above 0"));
  CHECK_THROWS_WITH(FlowSizeCdf::load(shipped_cdf_dir()), Catch::Contains("found a directory"));
}

TEST_CASE("the packet pool gives each packet a cache line and grows in huge-page blocks",
          "[packet]") {
  PacketPool pool;
  std::vector<Packet*> taken;
  std::set<Packet*> distinct;
  for (int i = 0; i < 40'000; ++i) {
    Packet* p = pool.acquire();
    REQUIRE(reinterpret_cast<uintptr_t>(p) % 64 == 0);
    p->psn = static_cast<uint32_t>(i);
    taken.push_back(p);
    distinct.insert(p);
  }
  CHECK(distinct.size() == taken.size());
  // A first block of 4,096 packets, then blocks of 2 MiB (32,768 packets).
  CHECK(pool.capacity() == 4096 + 2 * 32768);
  CHECK(pool.in_use() == 40'000);
  for (size_t i = 0; i < taken.size(); ++i) REQUIRE(taken[i]->psn == i);  // no two overlap
  for (Packet* p : taken) pool.release(p);
  CHECK(pool.in_use() == 0);
  for (int i = 0; i < 40'000; ++i) taken[static_cast<size_t>(i)] = pool.acquire();
  CHECK(pool.capacity() == 4096 + 2 * 32768);  // recycled, nothing new
  CHECK(taken.front()->psn == 0);              // acquire() hands out a fresh packet
  for (Packet* p : taken) pool.release(p);
}

TEST_CASE(
    "a packet released in another partition's pool stays there, and balance() moves "
    "free batches to the pools that take",
    "[packet]") {
  std::deque<PacketPool> pools;
  pools.emplace_back(0);
  pools.emplace_back(1);
  // Pool 0's first block, all taken; half of it ends its life in pool 1, half in pool 0.
  std::vector<Packet*> taken;
  for (int i = 0; i < 4096; ++i) {
    taken.push_back(pools[0].acquire());
    taken.back()->psn = 7;
  }
  CHECK(pools[0].capacity() == 4096);
  const std::set<Packet*> away(taken.begin(), taken.begin() + 2048);
  for (Packet* p : away) pools[1].release(p);
  for (size_t i = 2048; i < taken.size(); ++i) pools[0].release(taken[i]);
  CHECK(pools[0].in_use() == 2048);  // handed out 4,096, took back 2,048
  CHECK(pools[1].in_use() == -2048);
  CHECK(pools[0].free_packets() == 2048);
  CHECK(pools[1].free_packets() == 2048);
  // Pool 1 hands out the last packet released into it first: its line is the warmest.
  Packet* warm = pools[1].acquire();
  CHECK(warm == taken[2047]);
  CHECK(warm->home == 1);
  CHECK(warm->psn == 0);  // handed out fresh
  pools[1].release(warm);
  CHECK(pools[1].capacity() == 0);  // it grew nothing: it took what it was given

  // Each pool holds its current list (256) and 7 full batches. Pool 0 took 4,096 packets in
  // this window, so it wants 32 batches for the next; pool 1 took one, so it wants one and
  // keeps one more to spare: balance() moves pool 1's other 5 batches to pool 0.
  static_assert(PacketPool::kBatch == 256);
  PacketPool::balance(pools);
  CHECK(pools[0].free_packets() == 2048 + 5 * 256);
  CHECK(pools[1].free_packets() == 3 * 256);
  std::set<Packet*> again;
  for (int i = 0; i < 2048 + 5 * 256; ++i) {
    Packet* p = pools[0].acquire();
    CHECK(p->home == 0);
    again.insert(p);
  }
  CHECK(pools[0].capacity() == 4096);  // no block is added
  std::set<Packet*> all(taken.begin(), taken.end());
  for (Packet* p : again) CHECK(all.count(p) == 1);
  Packet* beyond = pools[0].acquire();  // pool 0's stock is spent: now a new block
  CHECK(pools[0].capacity() == 4096 + 32768);
  CHECK(all.count(beyond) == 0);

  // A window in which neither pool takes anything moves nothing.
  pools[0].release(beyond);
  PacketPool::balance(pools);
  const int64_t free0 = pools[0].free_packets();
  const int64_t free1 = pools[1].free_packets();
  PacketPool::balance(pools);
  CHECK(pools[0].free_packets() == free0);
  CHECK(pools[1].free_packets() == free1);
  for (Packet* p : again) pools[0].release(p);
  CHECK(pools[0].in_use() + pools[1].in_use() == 0);  // every packet is free again
}

TEST_CASE("balance() leaves a pool that releases more than it takes no more than it needs",
          "[packet]") {
  // A sender (pool 0) takes 1,000 packets a window that all end their life in pool 1. Without
  // balance() pool 0 would grow a block every 33 windows for ever; with it the packets go round.
  std::deque<PacketPool> pools;
  pools.emplace_back(0);
  pools.emplace_back(1);
  for (int window = 0; window < 200; ++window) {
    std::vector<Packet*> sent;
    for (int i = 0; i < 1000; ++i) sent.push_back(pools[0].acquire());
    for (Packet* p : sent) pools[1].release(p);
    PacketPool::balance(pools);
  }
  CHECK(pools[0].capacity() == 4096);  // the first block only
  CHECK(pools[1].capacity() == 0);
  // A window in which nothing is taken: each pool's want starts again from nothing at every
  // boundary, so the next one moves none of pool 1's batches to pool 0.
  const int64_t kept = pools[1].free_packets();
  CHECK(kept > 2 * static_cast<int64_t>(PacketPool::kBatch));
  PacketPool::balance(pools);
  CHECK(pools[1].free_packets() == kept);
  CHECK(pools[0].in_use() + pools[1].in_use() == 0);
}
