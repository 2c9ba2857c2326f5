// DCQCN reaction point driven alone, step by step against the algorithm's arithmetic, and the
// notification point's CNP spacing in a run.
#include <cmath>

#include "models/cc/algorithm.h"
#include "models/fabric/fabric.h"
#include "test_support.h"

using namespace fabtwin;

namespace {
DcqcnConfig paper() {
  const nlohmann::json s = {{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"profile", "paper"}}}}}};
  const CcConfig c = read_cc_config(s);
  REQUIRE(c.algorithm == CcAlgorithm::Dcqcn);
  return c.dcqcn;
}
DcqcnConfig connectx() {
  const nlohmann::json s = {{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"profile", "connectx"}}}}}};
  const CcConfig c = read_cc_config(s);
  REQUIRE(c.algorithm == CcAlgorithm::Dcqcn);
  return c.dcqcn;
}
constexpr double kLine = 100e9;
double rate_of(const DcqcnReactionPoint& rp) {
  return static_cast<double>(rp.rate().bps);
}
double target_of(const DcqcnReactionPoint& rp, Time t) {
  return static_cast<double>(rp.state(t).target.bps);
}
}  // namespace

TEST_CASE("a CNP cuts R_C by alpha/2 after alpha's EWMA step, and sets R_T = R_C", "[dcqcn]") {
  const DcqcnConfig c = paper();
  CHECK(c.g() == Approx(1.0 / 256));
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  CHECK(rate_of(rp) == kLine);
  rp.on_cnp(Time{0});  // alpha: 1 -> (1-g) 1 + g = 1; rate halves
  CHECK(rp.state(Time{0}).alpha == Approx(1.0));
  CHECK(rate_of(rp) == Approx(kLine / 2));
  CHECK(target_of(rp, Time{0}) == Approx(kLine));  // first cut: R_T = R_C before the cut
  rp.on_cnp(microseconds(10));
  CHECK(target_of(rp, microseconds(10)) == Approx(kLine / 2));
  CHECK(rate_of(rp) == Approx(kLine / 4));
  CHECK(rp.state(microseconds(10)).cuts == 2);
}

TEST_CASE("alpha decays by (1 - g) for each K without a CNP", "[dcqcn]") {
  const DcqcnConfig c = paper();
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  const double g = c.g();
  CHECK(rp.state(microseconds(54)).alpha == Approx(1.0));
  CHECK(rp.state(microseconds(55)).alpha == Approx(1 - g));
  CHECK(rp.state(microseconds(550)).alpha == Approx(std::pow(1 - g, 10)));
  // A CNP at 120 us first applies the two decays it owes, then rises.
  rp.on_cnp(microseconds(120));
  const double a = (1 - g) * std::pow(1 - g, 2) + g;
  CHECK(rp.state(microseconds(120)).alpha == Approx(a));
  CHECK(rp.state(microseconds(175)).alpha == Approx(a * (1 - g)));
}

TEST_CASE("after a cut, increase events 1..F-1 halve the distance to R_T, then R_T grows by R_AI",
          "[dcqcn]") {
  const DcqcnConfig c = paper();
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  rp.on_cnp(Time{1});  // R_T = 50G, R_C = 25G (alpha still 1)
  double rate = rate_of(rp), target = target_of(rp, Time{1});
  Time t = rp.next_timer();
  CHECK(t == Time{1} + c.rpg_time_reset);
  for (int stage = 1; stage <= 8; ++stage) {
    rp.on_timer(t);
    if (stage >= c.rpg_threshold) target += static_cast<double>(c.rpg_ai_rate.bps);
    rate = (rate + target) / 2;
    INFO("stage " << stage);
    CHECK(target_of(rp, t) == Approx(target));
    CHECK(rate_of(rp) == Approx(rate));
    CHECK(rp.next_timer() == t + c.rpg_time_reset);
    t = rp.next_timer();
  }
}

TEST_CASE("the byte counter drives increases too, both past F is hyper increase", "[dcqcn]") {
  DcqcnConfig c = paper();
  c.rpg_byte_reset = 10'000;
  c.rpg_threshold = 2;
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  rp.on_cnp(Time{1});
  double rate = rate_of(rp), target = target_of(rp, Time{1});
  // Byte event 1 is fast recovery (F = 2); from event 2 on, additive increase.
  for (int i = 1; i <= 3; ++i) {
    rp.on_packet_sent(10'000, Time{2});
    if (i >= 2) target += static_cast<double>(c.rpg_ai_rate.bps);
    rate = (rate + target) / 2;
    CHECK(rate_of(rp) == Approx(rate));
  }
  // Two timer events bring the time stage to F: hyper increase, R_HAI x (min stage - F + 1).
  rp.on_timer(rp.next_timer());
  target += static_cast<double>(c.rpg_ai_rate.bps);  // byte stage 3 >= F, time stage 1 < F
  rate = (rate + target) / 2;
  CHECK(rate_of(rp) == Approx(rate));
  const Time t2 = rp.next_timer();
  rp.on_timer(t2);
  target += static_cast<double>(c.rpg_hai_rate.bps) * (2 - 2 + 1);
  rate = (rate + target) / 2;
  CHECK(target_of(rp, t2) == Approx(target));
  CHECK(rate_of(rp) == Approx(rate));
  CHECK(rp.next_timer() == t2 + Time{c.rpg_time_reset.ps / 2});  // hyper: timer halves
}

TEST_CASE("the rate never falls below rpg_min_rate and recovers to exactly line rate", "[dcqcn]") {
  const DcqcnConfig c = paper();
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  for (int i = 0; i < 100; ++i) rp.on_cnp(Time{i});
  CHECK(rate_of(rp) == Approx(static_cast<double>(c.rpg_min_rate.bps)));
  for (int i = 0; i < 200'000 && rp.next_timer() != Time::max(); ++i) rp.on_timer(rp.next_timer());
  CHECK(rate_of(rp) == kLine);
  CHECK(rp.next_timer() == Time::max());  // idle once recovered: no timer events
}

TEST_CASE("ConnectX: one cut per monitor period, each cut keeping at least min_dec_fac",
          "[dcqcn]") {
  const DcqcnConfig c = connectx();
  CHECK(c.g() == Approx(5.0 / 1024));
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  const double first = kLine * (1 - 1023.0 / 1024 / 2);  // alpha starts at 1023/1024
  CHECK(rate_of(rp) == Approx(first));
  rp.on_cnp(microseconds(1));  // inside the 4 us monitor period: deferred
  CHECK(rate_of(rp) == Approx(first));
  CHECK(rp.next_timer() == microseconds(4));
  rp.on_timer(microseconds(4));
  CHECK(rate_of(rp) < first);
  CHECK(rp.state(microseconds(4)).cuts == 2);
  // With rpg_gd = 10 the cut is R (1 - alpha), which min_dec_fac 50% limits to a halving.
  DcqcnConfig steep = c;
  steep.rpg_gd = 10;
  DcqcnReactionPoint limited(steep, BitsPerSec{100'000'000'000});
  limited.on_cnp(Time{0});
  CHECK(rate_of(limited) == Approx(kLine * 0.5));
}

TEST_CASE("ConnectX alpha is updated every period, rising in periods with a CNP", "[dcqcn]") {
  const DcqcnConfig c = connectx();
  const double g = c.g();
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  const double a0 = 1023.0 / 1024;
  rp.on_cnp(Time{0});
  CHECK(rp.state(Time{500'000}).alpha == Approx(a0));                  // within the period
  CHECK(rp.state(microseconds(1)).alpha == Approx((1 - g) * a0 + g));  // period had a CNP
  CHECK(rp.state(microseconds(11)).alpha == Approx(((1 - g) * a0 + g) * std::pow(1 - g, 10)));
}

TEST_CASE("profiles and overrides are read with their knob names", "[dcqcn][scenario]") {
  const nlohmann::json s = {{"nic",
                             {{"cc",
                               {{"algorithm", "dcqcn"},
                                {"profile", "connectx"},
                                {"rpg_ai_rate", "20Mbps"},
                                {"dce_tcp_g", 1000}}}}}};
  const CcConfig read = read_cc_config(s);
  REQUIRE(read.algorithm == CcAlgorithm::Dcqcn);
  const DcqcnConfig& c = read.dcqcn;
  CHECK(c.rpg_ai_rate.bps == 20'000'000);
  CHECK(c.dce_tcp_g == 1000);
  CHECK(c.rpg_time_reset == microseconds(300));
  CHECK(read_cc_config({{"nic", {{"cc", {{"algorithm", "none"}}}}}}).algorithm ==
        CcAlgorithm::None);
  CHECK(read_cc_config(nlohmann::json::object()).algorithm == CcAlgorithm::None);
  CHECK_THROWS_WITH(
      read_cc_config({{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"rpg_ai_rat", "1Mbps"}}}}}}),
      Catch::Contains("at nic.cc.rpg_ai_rat") && Catch::Contains("unknown key"));
  CHECK_THROWS_WITH(
      read_cc_config({{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"dce_tcp_rtt", "0us"}}}}}}),
      Catch::Contains("at nic.cc.dce_tcp_rtt") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(
      read_cc_config(
          {{"nic",
            {{"cc",
              {{"algorithm", "dcqcn"}, {"rpg_time_reset", "0us"}, {"rpg_byte_reset", "0B"}}}}}}),
      Catch::Contains("at nic.cc.rpg_byte_reset") && Catch::Contains("never increase"));
  CHECK_THROWS_WITH(
      read_cc_config(
          {{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"rate_reduce_monitor", "periodic"}}}}}}),
      Catch::Contains("at nic.cc.rate_reduce_monitor") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(
      read_cc_config({{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"notification", "ecn"}}}}}}),
      Catch::Contains("at nic.cc.notification"));
  // The modelling choices keep today's behaviour unless asked for, in both profiles.
  for (const DcqcnConfig& d : {paper(), connectx()}) {
    CHECK_FALSE(d.fast_recovery_f);
    CHECK_FALSE(d.hyper_linear);
    CHECK_FALSE(d.monitor_periodic);
    CHECK_FALSE(d.ack_echo);
  }
}

TEST_CASE("nic.cc.cnp_delay: 0 in both profiles, a time of 0 or more, DCQCN's only",
          "[dcqcn][scenario][cnp_delay]") {
  for (const DcqcnConfig& d : {paper(), connectx()}) CHECK(d.cnp_delay == Time{});
  const auto cc = [](const nlohmann::json& knobs) {
    return read_cc_config({{"nic", {{"cc", knobs}}}});
  };
  CHECK(
      cc({{"algorithm", "dcqcn"}, {"profile", "connectx"}, {"cnp_delay", "2us"}}).dcqcn.cnp_delay ==
      microseconds(2));
  CHECK_THROWS_WITH(cc({{"algorithm", "dcqcn"}, {"cnp_delay", "-2us"}}),
                    Catch::Contains("at nic.cc.cnp_delay"));
  CHECK_THROWS_WITH(cc({{"algorithm", "dctcp"}, {"cnp_delay", "2us"}}),
                    Catch::Contains("at nic.cc.cnp_delay") && Catch::Contains("dcqcn"));
}

TEST_CASE("the notification point sends at most one CNP per queue pair per interval",
          "[dcqcn][run]") {
  const nlohmann::json scenario = {
      {"topology", {{"type", "star"}, {"hosts", 9}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"nic", {{"cc", {{"algorithm", "dcqcn"}}}}},
      {"traffic", {{{"type", "incast"}, {"receiver", 0}, {"size", "4MB"}}}},
      {"run", {{"end", "1s"}}}};
  Fabric fabric(testing::inline_document(scenario));
  const RunResult r = fabric.run();
  int64_t cnps = 0;
  for (const FlowRecord& f : r.flows) {
    REQUIRE(f.completed);
    CHECK(f.cnps_sent > 0);
    CHECK(f.cnps_received == f.cnps_sent);  // CNPs are never dropped (strict priority 6)
    CHECK(f.rate_cuts > 0);
    // One per 50 us at most over the flow's life.
    CHECK(f.cnps_sent <= f.fct().ps / microseconds(50).ps + 1);
    cnps += f.cnps_sent;
  }
  CHECK(cnps > 0);
  CHECK_FALSE(r.rate_samples.empty());
}

TEST_CASE("rate_to_set_on_first_cnp sets the rate instead of cutting, and counts as a cut",
          "[dcqcn]") {
  DcqcnConfig c = connectx();
  c.rate_to_set_on_first_cnp = BitsPerSec{10'000'000'000};
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  CHECK(rate_of(rp) == Approx(10e9));
  CHECK(target_of(rp, Time{0}) == Approx(10e9));
  CHECK(rp.state(Time{0}).cuts == 1);
  rp.on_cnp(microseconds(1));  // inside the monitor period that the first CNP started
  CHECK(rate_of(rp) == Approx(10e9));
  CHECK(rp.next_timer() == microseconds(4));
}

namespace {
// The rate and target the next increase event gives: fast recovery, R_AI or `hai` added.
void expect_increase(const DcqcnReactionPoint& rp, Time t, double& rate, double& target,
                     double add) {
  target += add;
  rate = (rate + target) / 2;
  CHECK(target_of(rp, t) == Approx(target));
  CHECK(rate_of(rp) == Approx(rate));
}
}  // namespace

TEST_CASE("fast_recovery_steps F: events 1..F halve the distance, the (F+1)-th adds R_AI",
          "[dcqcn]") {
  DcqcnConfig c = paper();
  c.fast_recovery_f = true;
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  rp.on_cnp(Time{1});
  double rate = rate_of(rp), target = target_of(rp, Time{1});
  for (int event = 1; event <= c.rpg_threshold + 2; ++event) {
    const Time t = rp.next_timer();
    rp.on_timer(t);
    INFO("event " << event);
    expect_increase(rp, t, rate, target,
                    event > c.rpg_threshold ? static_cast<double>(c.rpg_ai_rate.bps) : 0.0);
  }
}

TEST_CASE("with the byte counter off the timer alone reaches hyper increase", "[dcqcn]") {
  DcqcnConfig c = paper();
  c.rpg_byte_reset = 0;
  c.rpg_threshold = 3;
  const double hai = static_cast<double>(c.rpg_hai_rate.bps);
  SECTION("qcn: R_HAI x (stage - F + 1), the timer at T/2") {
    DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
    rp.on_cnp(Time{0});
    rp.on_cnp(Time{1});
    double rate = rate_of(rp), target = target_of(rp, Time{1});
    rp.on_packet_sent(100'000'000, Time{2});  // no byte counter: no increase
    CHECK(rate_of(rp) == Approx(rate));
    for (int event = 1; event <= 5; ++event) {
      const Time t = rp.next_timer();
      rp.on_timer(t);
      INFO("event " << event);
      expect_increase(rp, t, rate, target, event >= 3 ? hai * (event - 3 + 1) : 0.0);
      CHECK(rp.next_timer() == t + (event >= 3 ? Time{c.rpg_time_reset.ps / 2} : c.rpg_time_reset));
    }
  }
  SECTION("linear: R_HAI per event, the timer at T (HPCC's ns-3)") {
    c.hyper_linear = true;
    c.fast_recovery_f = true;
    DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
    rp.on_cnp(Time{0});
    rp.on_cnp(Time{1});
    double rate = rate_of(rp), target = target_of(rp, Time{1});
    for (int event = 1; event <= 6; ++event) {
      const Time t = rp.next_timer();
      rp.on_timer(t);
      INFO("event " << event);
      expect_increase(rp, t, rate, target, event > 3 ? hai : 0.0);
      CHECK(rp.next_timer() == t + c.rpg_time_reset);
    }
  }
}

TEST_CASE("with the timer off the byte counter alone drives increases", "[dcqcn]") {
  DcqcnConfig c = paper();
  c.rpg_time_reset = Time{};
  c.rpg_byte_reset = 10'000;
  c.rpg_threshold = 2;
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(Time{0});
  rp.on_cnp(Time{1});
  CHECK(rp.next_timer() == Time::max());
  double rate = rate_of(rp), target = target_of(rp, Time{1});
  const double hai = static_cast<double>(c.rpg_hai_rate.bps);
  for (int event = 1; event <= 3; ++event) {
    rp.on_packet_sent(event >= 3 ? 5'000 : 10'000, Time{2});  // B/2 once in hyper increase
    INFO("event " << event);
    expect_increase(rp, Time{2}, rate, target, event >= 2 ? hai * (event - 2 + 1) : 0.0);
  }
  // linear: R_HAI per event and the byte counter stays at B.
  c.hyper_linear = true;
  DcqcnReactionPoint linear(c, BitsPerSec{100'000'000'000});
  linear.on_cnp(Time{0});
  linear.on_cnp(Time{1});
  rate = rate_of(linear);
  target = target_of(linear, Time{1});
  for (int event = 1; event <= 3; ++event) {
    linear.on_packet_sent(5'000, Time{2});  // half of B: no event yet
    CHECK(rate_of(linear) == Approx(rate));
    linear.on_packet_sent(5'000, Time{2});
    INFO("linear event " << event);
    expect_increase(linear, Time{2}, rate, target, event >= 2 ? hai : 0.0);
  }
}

TEST_CASE("rate_reduce_monitor periodic: one cut at the end of each grid period with a CNP",
          "[dcqcn]") {
  DcqcnConfig c = paper();
  c.monitor_periodic = true;
  c.rate_reduce_monitor_period = microseconds(50);
  DcqcnReactionPoint rp(c, BitsPerSec{100'000'000'000});
  rp.on_cnp(microseconds(10));  // the grid starts here; the cut waits for the period's end
  CHECK(rate_of(rp) == kLine);
  CHECK(rp.next_timer() == microseconds(60));
  rp.on_cnp(microseconds(30));  // the same period: still one cut
  rp.on_timer(microseconds(60));
  CHECK(rp.state(microseconds(60)).cuts == 1);
  CHECK(rate_of(rp) < kLine);
  rp.on_cnp(microseconds(125));                 // in the period 110..160 us
  CHECK(rp.next_timer() == microseconds(115));  // the rate-increase timer (cut + 55 us) first
  rp.on_timer(microseconds(115));
  CHECK(rp.next_timer() == microseconds(160));
  rp.on_timer(microseconds(160));
  CHECK(rp.state(microseconds(160)).cuts == 2);
}

TEST_CASE("notification ack_echo: an ACK's ECN echo counts as a CNP, and only then", "[dcqcn]") {
  DcqcnConfig c = paper();
  AckRecord ack;
  ack.now = microseconds(1);
  ack.ece = true;
  DcqcnReactionPoint cnp_mode(c, BitsPerSec{100'000'000'000});
  cnp_mode.on_ack(ack);  // CNP frames carry the notifications: the echo is ignored
  CHECK(cnp_mode.state(ack.now).cuts == 0);
  c.ack_echo = true;
  DcqcnReactionPoint echo_mode(c, BitsPerSec{100'000'000'000});
  ack.ece = false;
  echo_mode.on_ack(ack);
  CHECK(echo_mode.state(ack.now).cuts == 0);
  ack.ece = true;
  echo_mode.on_ack(ack);
  CHECK(echo_mode.state(ack.now).cuts == 1);
  CHECK(rate_of(echo_mode) == Approx(kLine / 2));
}

namespace {
// Two 1 MB flows into host 0 of a 100 Gb/s star with DCQCN; `nic` and `cc` are added.
RunResult two_into_one(const nlohmann::json& nic, const nlohmann::json& cc) {
  nlohmann::json scenario = {
      {"topology", {{"type", "star"}, {"hosts", 3}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"nic", {{"cc", {{"algorithm", "dcqcn"}}}}},
      {"traffic", {{{"type", "incast"}, {"receiver", 0}, {"senders", 2}, {"size", "1MB"}}}},
      {"run", {{"end", "1s"}}}};
  scenario["nic"].update(nic);
  scenario["nic"]["cc"].update(cc);
  Fabric fabric(testing::inline_document(scenario));
  return fabric.run();
}
const PortRecord& port_of(const RunResult& r, const std::string& node) {
  for (const PortRecord& p : r.ports) {
    if (p.node == node) return p;
  }
  FAIL("no port of " << node);
  return r.ports.front();
}
}  // namespace

TEST_CASE("ACKs travel in the data's priority, or in the one nic.ack_dscp maps to",
          "[dcqcn][run]") {
  const RunResult data = two_into_one(nlohmann::json::object(), nlohmann::json::object());
  const PortRecord& receiver = port_of(data, "host0");  // sends ACKs and CNPs only
  CHECK(receiver.counters[3].tx_packets > receiver.counters[6].tx_packets);  // DSCP 26: prio 3
  CHECK(receiver.counters[6].tx_packets == receiver.counters[6].cnp_sent);   // CNPs only
  const RunResult high = two_into_one({{"ack_dscp", 48}}, nlohmann::json::object());
  const PortRecord& r6 = port_of(high, "host0");
  CHECK(r6.counters[3].tx_packets == 0);
  CHECK(r6.counters[6].tx_packets > r6.counters[6].cnp_sent);
  CHECK_THROWS_WITH(two_into_one({{"ack_dscp", "high"}}, nlohmann::json::object()),
                    Catch::Contains("at nic.ack_dscp") && Catch::Contains("\"data\" or a DSCP"));
  CHECK_THROWS_WITH(two_into_one({{"ack_dscp", 64}}, nlohmann::json::object()),
                    Catch::Contains("at nic.ack_dscp"));
}

TEST_CASE("CNPs travel in the priority cnp_dscp maps to", "[dcqcn][run]") {
  const RunResult own = two_into_one(nlohmann::json::object(), {{"cnp_dscp", 26}});
  const PortRecord& receiver = port_of(own, "host0");
  CHECK(receiver.counters[6].cnp_sent == 0);
  CHECK(receiver.counters[3].cnp_sent > 0);  // in the data class, beside the ACKs
}

TEST_CASE("with ack_echo the receiver sends no CNP and the senders cut on echoes", "[dcqcn][run]") {
  const RunResult r =
      two_into_one(nlohmann::json::object(), {{"notification", "ack_echo"},
                                              {"rate_reduce_monitor", "periodic"},
                                              {"rate_reduce_monitor_period", "50us"}});
  for (const FlowRecord& f : r.flows) {
    REQUIRE(f.completed);
    CHECK(f.cnps_sent == 0);
    CHECK(f.rate_cuts > 0);
    CHECK(f.rate_cuts <= f.fct().ps / microseconds(50).ps + 1);  // one per grid period at most
  }
  CHECK(port_of(r, "host0").total(&PriorityCounters::cnp_sent) == 0);
  CHECK(r.congestion_control == "dcqcn (paper profile, ECN echo in ACKs)");
}

TEST_CASE("ECN marking judges the queue a packet leaves behind (dequeue) or finds (enqueue)",
          "[dcqcn][run]") {
  // Three single packets reach the switch 1 ns apart: A is sent at once, B and C wait. Marking
  // every packet over an empty queue: at enqueue only C finds a packet waiting (B, queued
  // behind A on the wire); at dequeue only B leaves one (C) behind.
  auto marked_flow = [](const char* mark_at) {
    nlohmann::json flows = nlohmann::json::array();
    for (int i = 0; i < 3; ++i) {
      flows.push_back(
          {{"src", i + 1}, {"dst", 0}, {"size", "1000B"}, {"start", std::to_string(i) + "ns"}});
    }
    const nlohmann::json scenario = {
        {"topology", {{"type", "star"}, {"hosts", 4}}},
        {"fabric",
         {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}},
          {"ecn", {{"kmin", "0B"}, {"kmax", "1B"}, {"pmax", 1.0}, {"mark_at", mark_at}}}}},
        {"nic", {{"mtu", "1000B"}, {"cc", {{"algorithm", "dcqcn"}}}}},
        {"traffic", {{{"type", "flows"}, {"flows", flows}}}},
        {"run", {{"end", "1ms"}}}};
    Fabric fabric(testing::inline_document(scenario));
    const RunResult r = fabric.run();
    int marked = -1, count = 0;
    for (const FlowRecord& f : r.flows) {
      if (f.cnps_sent > 0) {
        marked = static_cast<int>(f.spec.id);
        ++count;
      }
    }
    CHECK(count == 1);
    return marked;
  };
  CHECK(marked_flow("enqueue") == 2);
  CHECK(marked_flow("dequeue") == 1);
}
