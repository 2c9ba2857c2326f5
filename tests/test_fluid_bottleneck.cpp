// A scenario's bottleneck as the DCQCN fluid model sees it (models/fabric/fluid_bottleneck.h):
// the model's inputs read from the scenario, the default control-loop delay, the options and the
// refusals of what the equations cannot express.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/fabric/fluid_bottleneck.h"
#include "models/net/roce_framing.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

FabricSpec fixed_point(const std::vector<std::string>& sets = {}) {
  return FabricSpec::resolve(load_scenario(
      std::filesystem::path(FABTWIN_SOURCE_DIR) / "scenarios/dcqcn/fixed_point.json", sets));
}

// The ScenarioError message of fluid_bottleneck for `sets`, or "" when it accepts them.
std::string refusal(const std::vector<std::string>& sets) {
  try {
    fluid_bottleneck(fixed_point(sets));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Fluid bottleneck: the model's inputs are the scenario's", "[fluid]") {
  const FabricSpec spec =
      fixed_point({"traffic[0].senders=4", "fabric.link.rate=40Gbps", "nic.cc.rpg_ai_rate=10Mbps",
                   "fabric.ecn.kmax=400KB", "nic.cc.dce_tcp_g=960"});
  const FluidBottleneck b = fluid_bottleneck(spec);
  CHECK(b.model.capacity_bps == 40e9);
  CHECK(b.line_rate_bps == 40e9);
  CHECK(b.model.flows == 4);
  CHECK(b.flows.size() == 4);
  CHECK(b.model.packet_bytes == 1062);
  CHECK(b.model.kmin_bytes == 5000);
  CHECK(b.model.kmax_bytes == 400000);
  CHECK(b.model.pmax == 0.01);
  CHECK(b.model.rate_ai_bps == 10e6);
  CHECK(b.model.g == Approx(64.0 / 1024));
  CHECK(b.model.tau_s == Approx(50e-6));
  CHECK(b.model.tau_prime_s == Approx(55e-6));
  CHECK(b.model.timer_s == Approx(55e-6));
  CHECK(b.model.byte_counter_bytes == 10e6);
  CHECK(b.model.fast_recovery == 4);  // the F - 1 pure halvings the NIC makes by default
  CHECK(b.initial_alpha == 1);
  CHECK(b.receiver == 0);
  // 100 MB messages of 1000 B packets, all posted at 0.
  for (const DcqcnFluidFlow& f : b.flows) {
    CHECK(f.packets == 100000);
    CHECK(f.start_s == 0);
  }
  // The base RTT: two hops of a 1062 B data frame out and two of a 78 B CNP back, each frame
  // with 20 B of preamble and gap, over 1 us links.
  const Time data = roce::wire_time(1062, BitsPerSec{40'000'000'000});
  const Time cnp = roce::wire_time(78, BitsPerSec{40'000'000'000});
  CHECK(data == Time{216'400});
  CHECK(cnp == Time{19'600});
  CHECK(b.base_rtt == (data + Time{1'000'000}) * 2 + (cnp + Time{1'000'000}) * 2);
  CHECK(b.base_rtt == Time{4'472'000});
}

TEST_CASE("Fluid bottleneck: options and their defaults", "[fluid]") {
  const FabricSpec spec = fixed_point({"run.end=30ms"});
  const FluidBottleneck b = fluid_bottleneck(spec);
  const FluidSetup s = fluid_setup(spec, b, {});
  CHECK(s.duration == Time{30'000'000'000});
  CHECK(s.delay == b.base_rtt);
  CHECK(s.sample == Time{10'000'000});  // the scenario's rate_sample_interval
  CHECK(s.step == kFluidStep);
  CHECK(s.after == Time{15'000'000'000});
  CHECK(s.params.delay_s == Approx(b.base_rtt.seconds()));
  FluidOptions o;
  o.step = Time{20'000'000};  // above the sample interval
  CHECK_THROWS_AS(fluid_setup(spec, b, o), std::invalid_argument);
  o = {};
  o.after = Time{30'000'000'000};
  CHECK_THROWS_AS(fluid_setup(spec, b, o), std::invalid_argument);
  o = {};
  o.sample = Time{0};  // the step's default follows it down: the message names --sample
  CHECK_THROWS_WITH(fluid_setup(spec, b, o), Catch::Contains("--sample must be > 0"));
}

TEST_CASE("Fluid bottleneck: refuses what the equations cannot express, naming the path",
          "[fluid]") {
  CHECK(refusal({}).empty());
  CHECK(refusal({"nic.cc={\"algorithm\": \"dctcp\"}"}).find("at nic.cc.algorithm:") !=
        std::string::npos);
  CHECK(refusal({"nic.cc.rpg_gd=12"}).find("at nic.cc.rpg_gd:") != std::string::npos);
  CHECK(refusal({"nic.cc.rpg_min_dec_fac=60"}).find("at nic.cc.rpg_min_dec_fac:") !=
        std::string::npos);
  CHECK(refusal({"nic.cc.rpg_min_dec_fac=50"}).empty());
  CHECK(refusal({"nic.cc.clamp_tgt_rate=false"}).find("at nic.cc.clamp_tgt_rate:") !=
        std::string::npos);
  CHECK(refusal({"nic.cc.rate_to_set_on_first_cnp=10Gbps"})
            .find("at nic.cc.rate_to_set_on_first_cnp:") != std::string::npos);
  CHECK(refusal({"nic.rx_drain_rate=50Gbps"}).find("at nic.rx_drain_rate:") != std::string::npos);
  CHECK(refusal({"traffic=[{\"type\": \"flows\", \"flows\": [{\"src\": 1, \"dst\": 0, \"size\": "
                 "\"1MB\"}, {\"src\": 2, \"dst\": 3, \"size\": \"1MB\"}]}]"})
            .find("at traffic[0]: the fluid model has one bottleneck") != std::string::npos);
  // Every knob outside the equations is named in one message, with the settings to compare.
  const std::string two = refusal({"nic.cc.rpg_gd=12", "nic.cc.clamp_tgt_rate=false"});
  for (const char* part : {"at nic.cc.rpg_gd:", "also at nic.cc.clamp_tgt_rate:",
                           "(to compare with the equations, set all of --set nic.cc.rpg_gd=11 "
                           "--set nic.cc.clamp_tgt_rate=true)"}) {
    CHECK(two.find(part) != std::string::npos);
  }
  // A monitor period up to the CNP interval (50 us here) merges no CNPs: accepted.
  CHECK(refusal({"nic.cc.rate_reduce_monitor_period=50us"}).empty());
  CHECK(refusal({"nic.cc.rate_reduce_monitor_period=60us"})
            .find("at nic.cc.rate_reduce_monitor_period:") != std::string::npos);
  // The ConnectX profile: its periodic alpha rule (the equations' alpha is its mean) and its
  // 4 us monitor period (its CNP interval is 4 us) are not refused, its target rule is.
  const std::string connectx = refusal({"nic.cc.profile=connectx"});
  CHECK(connectx.find("at nic.cc.clamp_tgt_rate:") != std::string::npos);
  CHECK(connectx.find("(to compare with the equations, set --set nic.cc.clamp_tgt_rate=true)") !=
        std::string::npos);
  CHECK(connectx.find("alpha_update") == std::string::npos);
  CHECK(connectx.find("monitor") == std::string::npos);
  CHECK(refusal({"nic.cc.alpha_update=periodic"}).empty());
  // What the model cannot express at all comes before knobs a user can switch.
  CHECK(refusal({"nic.cc.profile=connectx",
                 "traffic=[{\"type\": \"flows\", \"flows\": [{\"src\": 1, \"dst\": 0, \"size\": "
                 "\"1MB\"}, {\"src\": 2, \"dst\": 3, \"size\": \"1MB\"}]}]"})
            .find("at traffic[0]: the fluid model has one bottleneck") != std::string::npos);
  // The ConnectX profile with the paper's rules for the refused knobs is accepted.
  CHECK(refusal({"nic.cc.profile=connectx", "nic.cc.clamp_tgt_rate=true"}).empty());
  // A periodic monitor is the model's slotted rule: any period, the model's tau.
  CHECK(refusal({"nic.cc.rate_reduce_monitor=periodic", "nic.cc.rate_reduce_monitor_period=60us"})
            .empty());
  // ECN echoes in ACKs: no notification point, so only a monitor period spaces the cuts.
  CHECK(refusal({"nic.cc.notification=ack_echo"}).find("at nic.cc.rate_reduce_monitor_period:") !=
        std::string::npos);
  CHECK(
      refusal({"nic.cc.notification=ack_echo", "nic.cc.rate_reduce_monitor_period=80us"}).empty());
}

TEST_CASE("Fluid bottleneck: the DCQCN choices map onto the model's inputs", "[fluid]") {
  const FluidBottleneck f = fluid_bottleneck(fixed_point({"nic.cc.fast_recovery_steps=F"}));
  CHECK(f.model.fast_recovery == 5);
  const FluidBottleneck slotted = fluid_bottleneck(
      fixed_point({"nic.cc.rate_reduce_monitor=periodic", "nic.cc.rate_reduce_monitor_period=80us",
                   "nic.cc.min_time_between_cnps=0us"}));
  CHECK(slotted.model.tau_s == Approx(80e-6));  // the larger of the two spacings of cuts
  const FluidBottleneck echo = fluid_bottleneck(
      fixed_point({"nic.cc.notification=ack_echo", "nic.cc.rate_reduce_monitor=periodic",
                   "nic.cc.rate_reduce_monitor_period=20us"}));
  CHECK(echo.model.tau_s == Approx(20e-6));  // no CNP interval: the monitor's period alone
  CHECK(fluid_bottleneck(fixed_point({"nic.cc.fast_recovery_steps=F", "nic.cc.rpg_threshold=3"}))
            .model.fast_recovery == 3);
  const FluidBottleneck timer_only = fluid_bottleneck(fixed_point({"nic.cc.rpg_byte_reset=0B"}));
  CHECK(timer_only.model.byte_counter_bytes > 1e15);  // off: never fires
  CHECK(timer_only.model.timer_s == Approx(55e-6));
}
