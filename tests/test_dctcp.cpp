// DCTCP driven alone with scripted ACK records, against the update rules by hand, and the
// nic.cc groups refusing another algorithm's knobs.
#include <set>

#include "models/cc/algorithm.h"
#include "test_support.h"

using namespace fabtwin;

namespace {
DctcpConfig config() {
  DctcpConfig c;
  c.initial_window = 40'000;
  c.min_window = 0;
  c.g = 1.0 / 16;
  c.initial_alpha = 1;
  return c;
}
AckRecord ack(uint32_t psn, uint32_t next_psn, int64_t acked, int64_t in_flight, bool ece) {
  AckRecord a;
  a.psn = psn;
  a.next_psn = next_psn;
  a.acked_bytes = acked;
  a.in_flight = in_flight;
  a.ece = ece;
  return a;
}
constexpr BitsPerSec kLine{100'000'000'000};
}  // namespace

TEST_CASE("dctcp: alpha per window, one cut per marked window, one packet more per clean one",
          "[dctcp]") {
  const DctcpConfig c = config();
  Dctcp cc(c, kLine, 1000);
  CHECK(cc.window() == 40'000);
  CHECK(cc.rate() == kLine);
  // The first ACK closes the first window (it began at PSN 0): no marks, and the window was full.
  cc.on_ack(ack(1, 10, 1000, 39'000, false));
  CHECK(cc.state(Time{}).alpha == 0.9375);  // (1 - 1/16) x 1 + 1/16 x 0
  CHECK(cc.window() == 41'000);
  // A mark inside the next window (it ends at PSN 10) cuts at once with the current alpha...
  cc.on_ack(ack(5, 14, 4000, 20'000, true));
  CHECK(cc.window() == 21'781);  // 41000 (1 - 0.9375 / 2) = 21781.25
  CHECK(cc.state(Time{}).cuts == 1);
  // ...and only once: a second mark in the same window does not cut again.
  cc.on_ack(ack(7, 14, 1000, 19'000, true));
  CHECK(cc.window() == 21'781);
  // The window ends: F = 5000 marked of 7000 acknowledged bytes; no growth after a cut.
  cc.on_ack(ack(10, 20, 2000, 10'000, false));
  const double alpha = 0.9375 * 15 / 16 + 5.0 / 7 / 16;
  CHECK(cc.state(Time{}).alpha == Approx(alpha).epsilon(1e-15));
  CHECK(cc.window() == 21'781);
  // The next window's first mark cuts with the new alpha.
  cc.on_ack(ack(12, 22, 2000, 10'000, true));
  CHECK(cc.window() == static_cast<int64_t>(21'781 * (1 - alpha / 2)));
  CHECK(cc.state(Time{}).cuts == 2);
}

TEST_CASE("dctcp: no growth while the window did not limit sending, and a floor", "[dctcp]") {
  DctcpConfig c = config();
  c.min_window = 3000;
  Dctcp cc(c, kLine, 1000);
  cc.on_ack(ack(1, 2, 1000, 1000, false));  // 1000 in flight + 1000 acked + 1 packet < 40000
  CHECK(cc.window() == 40'000);
  CHECK(cc.state(Time{}).alpha == 0.9375);
  for (uint32_t i = 2; i < 40; i += 2) cc.on_ack(ack(i, i + 1, 1000, 0, true));
  CHECK(cc.window() == 3000);
  Dctcp tiny(DctcpConfig{100, 0, 1.0 / 16, 1}, kLine, 1000);
  CHECK(tiny.window() == 1000);  // never below one packet
}

TEST_CASE("nic.cc: the algorithm's own group, another algorithm's knob is refused by name",
          "[dctcp][timely][scenario]") {
  auto read = [](nlohmann::json cc) { return read_cc_config({{"nic", {{"cc", std::move(cc)}}}}); };
  const CcConfig d = read({{"algorithm", "dctcp"}, {"initial_window", "64KB"}});
  CHECK(d.algorithm == CcAlgorithm::Dctcp);
  CHECK(d.dctcp.initial_window == 64'000);
  CHECK(d.dctcp.g == 0.0625);
  CHECK(d.dctcp.initial_alpha == 1);
  CHECK(describe(d) == "dctcp");
  CHECK_THROWS_WITH(read({{"algorithm", "dctcp"}, {"rpg_ai_rate", "40Mbps"}}),
                    Catch::Contains("at nic.cc.rpg_ai_rate") && Catch::Contains("dcqcn") &&
                        Catch::Contains("algorithm is \"dctcp\""));
  CHECK_THROWS_WITH(read({{"algorithm", "none"}, {"profile", "paper"}}),
                    Catch::Contains("at nic.cc.profile") && Catch::Contains("\"none\""));
  CHECK_THROWS_WITH(read({{"algorithm", "dcqcn"}, {"t_low", "5us"}}),
                    Catch::Contains("at nic.cc.t_low") && Catch::Contains("timely") &&
                        Catch::Contains("\"dcqcn\""));
  CHECK_THROWS_WITH(read({{"algorithm", "timely"}, {"g", 0.5}}),
                    Catch::Contains("at nic.cc.g") && Catch::Contains("dctcp"));
  CHECK_THROWS_WITH(read({{"algorithm", "none"}, {"bogus", 1}}),
                    Catch::Contains("at nic.cc.bogus") && Catch::Contains("unknown key"));
  CHECK(describe(read({{"algorithm", "dcqcn"}})) == "dcqcn (paper profile)");
  CHECK(make_congestion_control(read(nlohmann::json::object()), kLine, Bytes{4096}) == nullptr);
  // The groups share one JSON object: no key may belong to two of them.
  std::set<std::string> keys;
  for (const ParamGroup* g : cc_param_groups()) {
    for (const Param& p : g->params) CHECK(keys.insert(p.key).second);
  }
}
