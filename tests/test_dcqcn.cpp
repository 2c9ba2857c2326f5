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
      read_cc_config({{"nic", {{"cc", {{"algorithm", "dcqcn"}, {"rpg_time_reset", "0us"}}}}}}),
      Catch::Contains("at nic.cc.rpg_time_reset") && Catch::Contains("positive"));
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
