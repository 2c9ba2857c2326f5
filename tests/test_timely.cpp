// TIMELY driven alone with scripted ACK records, against the paper's update rules by hand.
#include "models/cc/algorithm.h"
#include "test_support.h"

using namespace fabtwin;

namespace {
TimelyConfig config() {
  TimelyConfig c;
  c.t_low = microseconds(10);
  c.t_high = microseconds(100);
  c.min_rtt = microseconds(5);
  c.delta = {10'000'000};
  c.beta = 0.8;
  c.ewma_alpha = 0.5;
  c.hai_after = 2;
  c.hai_factor = 5;
  c.segment = 0;
  c.min_rate = {1'000'000'000};
  return c;
}
AckRecord ack(Time rtt, int64_t acked = 1000, uint32_t psn = 0, uint32_t next_psn = 0) {
  AckRecord a;
  a.rtt = rtt;
  a.acked_bytes = acked;
  a.psn = psn;
  a.next_psn = next_psn;
  return a;
}
constexpr BitsPerSec kLine{100'000'000'000};
double rate_of(const Timely& cc) {
  return static_cast<double>(cc.rate().bps);
}
}  // namespace

TEST_CASE("timely: the RTT gradient steers the rate, T_low and T_high bound it", "[timely]") {
  const TimelyConfig c = config();
  Timely cc(c, kLine);
  CHECK(cc.window() == CongestionControl::kUnlimitedWindow);
  CHECK(rate_of(cc) == Approx(100e9).epsilon(1e-9));
  cc.on_ack(ack(microseconds(5)));  // below T_low: + delta, capped at the line rate
  CHECK(rate_of(cc) == Approx(100e9).epsilon(1e-9));
  // Above T_high: rate (1 - beta (1 - 100/200)) = 0.6 rate. rtt_diff = 0.5 x 195 us.
  cc.on_ack(ack(microseconds(200)));
  CHECK(rate_of(cc) == Approx(60e9).epsilon(1e-9));
  CHECK(cc.state(Time{}).alpha == 19.5);  // gradient 97.5 us / 5 us
  CHECK(cc.state(Time{}).cuts == 1);
  // In between with a falling RTT: rtt_diff = 0.5 x 97.5 + 0.5 x (-140) = -21.25 us: + delta.
  cc.on_ack(ack(microseconds(60)));
  CHECK(cc.state(Time{}).alpha == -4.25);
  CHECK(rate_of(cc) == Approx(60.01e9).epsilon(1e-9));
  cc.on_ack(ack(microseconds(50)));  // rtt_diff -15.625 us: + delta (the second increase)
  CHECK(rate_of(cc) == Approx(60.02e9).epsilon(1e-9));
  cc.on_ack(ack(microseconds(40)));  // two increases in a row: hyperactive, + 5 delta
  CHECK(cc.state(Time{}).alpha == -2.5625);
  CHECK(rate_of(cc) == Approx(60.07e9).epsilon(1e-9));
  // A rising RTT: rtt_diff = 0.5 x (-12.8125) + 0.5 x 22 = 4.59375 us, gradient 0.91875:
  // rate (1 - 0.8 x 0.91875).
  cc.on_ack(ack(microseconds(62)));
  CHECK(cc.state(Time{}).alpha == Approx(0.91875).epsilon(1e-15));
  CHECK(rate_of(cc) == Approx(60.07e9 * (1 - 0.8 * 0.91875)).epsilon(1e-9));
  CHECK(cc.state(Time{}).cuts == 2);
  // The increase count restarted with the cut: the next falling RTT adds delta only.
  const double before = static_cast<double>(cc.rate().bps);
  cc.on_ack(ack(microseconds(30)));
  CHECK(rate_of(cc) == Approx(before + 10e6).epsilon(1e-9));
}

TEST_CASE("timely: one update per segment or per round trip, whichever ends first, a floor",
          "[timely]") {
  TimelyConfig c = config();
  c.segment = 64'000;
  Timely cc(c, kLine);
  // The first ACK ends the first round trip (it began at PSN 0); the next one ends at PSN 100.
  cc.on_ack(ack(microseconds(1000), 16'000, 4, 100));  // 1 - 0.8 (1 - 100/1000) = 0.28
  CHECK(rate_of(cc) == Approx(28e9).epsilon(1e-9));
  for (uint32_t psn = 8; psn <= 20; psn += 4) cc.on_ack(ack(microseconds(1000), 16'000, psn, 100));
  CHECK(rate_of(cc) == Approx(28e9 * 0.28).epsilon(1e-9));  // the 4th of 16 KB ends a segment
  for (uint32_t psn = 24; psn <= 32; psn += 4) cc.on_ack(ack(microseconds(1000), 16'000, psn, 100));
  CHECK(rate_of(cc) == Approx(28e9 * 0.28).epsilon(1e-9));  // 48 KB: no event yet
  cc.on_ack(ack(microseconds(1000), 4'000, 100, 101));      // the round trip ends first
  CHECK(rate_of(cc) == Approx(28e9 * 0.28 * 0.28).epsilon(1e-9));
  for (uint32_t psn = 101; psn < 140; ++psn) cc.on_ack(ack(microseconds(1000), 1000, psn, psn + 1));
  CHECK(rate_of(cc) == Approx(1e9).epsilon(1e-9));  // min_rate
}

TEST_CASE("timely: defaults of the group, scaled from the paper to 100 Gb/s",
          "[timely][scenario]") {
  const CcConfig c = read_cc_config({{"nic", {{"cc", {{"algorithm", "timely"}}}}}});
  REQUIRE(c.algorithm == CcAlgorithm::Timely);
  CHECK(c.timely.t_low == microseconds(5));
  CHECK(c.timely.t_high == microseconds(50));
  CHECK(c.timely.delta.bps == 100'000'000);
  CHECK(c.timely.beta == 0.8);
  CHECK(c.timely.ewma_alpha == 0.875);
  CHECK(c.timely.segment == 64'000);
  CHECK_THROWS_WITH(
      read_cc_config({{"nic", {{"cc", {{"algorithm", "timely"}, {"t_high", "1us"}}}}}}),
      Catch::Contains("at nic.cc.t_high"));
}
