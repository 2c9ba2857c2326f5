#include "models/fabric/fluid_bottleneck.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/net/roce_framing.h"

namespace fabtwin {

namespace {

std::string rate_text(BitsPerSec r) {
  return format_rate(r);
}

// The DCQCN knobs set outside the equations, all of them in one error: the first names the JSON
// path, the others follow, with the settings that bring the scenario within the equations.
void check_dcqcn(const DcqcnConfig& cc) {
  struct Mismatch {
    std::string path, why, fix;
  };
  std::vector<Mismatch> found;
  // The notification point sends a flow at most one CNP per min_time_between_cnps, so a monitor
  // period no longer than that merges none (up to jitter on the way back).
  // A periodic monitor is the model's slotted rule, its period the model's tau. With ECN echoes
  // in ACKs there is no notification point: the monitor period alone spaces the cuts.
  if (cc.ack_echo && cc.rate_reduce_monitor_period.ps == 0) {
    found.push_back({"nic.cc.rate_reduce_monitor_period",
                     "with notification ack_echo and no monitor period every echoed mark cuts; the "
                     "fluid model needs a window tau between cuts, found 0us",
                     "nic.cc.rate_reduce_monitor_period=50us"});
  }
  if (!cc.ack_echo && !cc.monitor_periodic &&
      cc.rate_reduce_monitor_period > cc.min_time_between_cnps) {
    found.push_back({"nic.cc.rate_reduce_monitor_period",
                     "the fluid model cuts on every CNP; a monitor period longer than the CNP "
                     "interval min_time_between_cnps (" +
                         format_time(cc.min_time_between_cnps) +
                         ") merges CNPs, which is not in its equations, found " +
                         format_time(cc.rate_reduce_monitor_period),
                     "nic.cc.rate_reduce_monitor_period=0us"});
  }
  if (cc.rpg_gd != 11) {
    found.push_back(
        {"nic.cc.rpg_gd",
         "the fluid model cuts R_C by alpha/2 (rpg_gd 11), found " + std::to_string(cc.rpg_gd),
         "nic.cc.rpg_gd=11"});
  }
  if (cc.rpg_min_dec_fac > 50) {
    found.push_back({"nic.cc.rpg_min_dec_fac",
                     "the fluid model's cut (at most half) is not limited, which needs "
                     "rpg_min_dec_fac <= 50, found " +
                         std::to_string(cc.rpg_min_dec_fac),
                     "nic.cc.rpg_min_dec_fac=50"});
  }
  if (!cc.clamp_tgt_rate) {
    found.push_back({"nic.cc.clamp_tgt_rate",
                     "the fluid model sets R_T to R_C at every cut (clamp_tgt_rate true), found "
                     "false",
                     "nic.cc.clamp_tgt_rate=true"});
  }
  if (cc.rate_to_set_on_first_cnp.bps != 0) {
    found.push_back({"nic.cc.rate_to_set_on_first_cnp",
                     "the fluid model cuts on the first CNP like on any other, found " +
                         rate_text(cc.rate_to_set_on_first_cnp),
                     "nic.cc.rate_to_set_on_first_cnp=0"});
  }
  if (found.empty()) return;
  std::string what = found.front().why;
  for (size_t i = 1; i < found.size(); ++i)
    what += "; also at " + found[i].path + ": " + found[i].why;
  what += found.size() == 1 ? " (to compare with the equations, set"
                            : " (to compare with the equations, set all of";
  for (const Mismatch& m : found) what += " --set " + m.fix;
  what += ")";
  throw ScenarioError(found.front().path, what);
}

}  // namespace

FluidBottleneck fluid_bottleneck(const FabricSpec& spec) {
  const NicConfig& nic = spec.nic;
  if (nic.cc.algorithm != CcAlgorithm::Dcqcn) {
    throw ScenarioError("nic.cc.algorithm",
                        "the fluid model is DCQCN's, found " + describe(nic.cc));
  }
  if (!spec.collectives.empty()) {
    throw ScenarioError("collectives",
                        "the fluid model has long flows into one receiver, not collectives");
  }
  if (spec.flows.empty()) throw ScenarioError("traffic", "the fluid model needs flows, found none");
  if (!spec.events.empty()) {
    throw ScenarioError("events", "the fluid model has fixed links, found " +
                                      std::to_string(spec.events.size()) + " link events");
  }
  const Topology& topo = spec.topology;
  const FlowSpec& first = spec.flows.front();
  const int receiver = first.dst;
  for (const FlowSpec& f : spec.flows) {
    if (f.dst != receiver) {
      throw ScenarioError(
          "traffic[" + std::to_string(f.generator) + "]",
          "the fluid model has one bottleneck, the port toward one receiver: flow " +
              std::to_string(first.id) + " goes to host " + std::to_string(receiver) +
              " and flow " + std::to_string(f.id) + " to host " + std::to_string(f.dst));
    }
  }
  if (nic.rx_drain_rate.bps > 0) {
    throw ScenarioError("nic.rx_drain_rate",
                        "a receive pipeline slower than the link is a second bottleneck, found " +
                            rate_text(nic.rx_drain_rate));
  }
  if (!nic.rx_stall_hosts.empty()) {
    throw ScenarioError("nic.rx_stall", "a stalled receiver is not in the fluid model");
  }
  check_dcqcn(nic.cc.dcqcn);

  // The receiver's access link is the bottleneck: its rate is C.
  const PortPeer sw = topo.peer(receiver, 0);
  const Link* access = nullptr;
  for (const Link& l : topo.links) {
    if ((l.a == receiver && l.b == sw.node) || (l.b == receiver && l.a == sw.node)) access = &l;
  }
  if (access == nullptr) {
    throw ScenarioError(
        "topology", "the receiver, host " + std::to_string(receiver) + ", has no link to a switch");
  }
  const BitsPerSec capacity = access->rate;

  // One line rate for every sender; no slower link on any sender's shortest paths.
  std::set<int> senders;
  const RoutingTable& routes = spec.routes;
  for (const FlowSpec& f : spec.flows) {
    if (routes.distance(f.src, receiver) < 0) {
      throw ScenarioError("traffic[" + std::to_string(f.generator) + "]",
                          "flow " + std::to_string(f.id) + " has no route from host " +
                              std::to_string(f.src) + " to host " + std::to_string(receiver));
    }
    senders.insert(f.src);
  }
  BitsPerSec line{};
  for (const Link& l : topo.links) {
    if (&l == access) continue;
    const bool a_host = l.a < topo.hosts, b_host = l.b < topo.hosts;
    const int host = a_host ? l.a : b_host ? l.b : -1;
    if (host >= 0) {
      if (!senders.count(host)) continue;
      if (line.bps == 0) line = l.rate;
      if (l.rate != line) {
        throw ScenarioError("topology", "the fluid model has one line rate: host " +
                                            std::to_string(host) + "'s link runs at " +
                                            rate_text(l.rate) + ", another sender's at " +
                                            rate_text(line));
      }
      continue;
    }
    for (int s : senders) {
      // On a shortest path from s when s reaches one end and the other end reaches the receiver
      // in one hop fewer than the whole path (distances are -1 where there is no path).
      const int d = routes.distance(s, receiver);
      auto through = [&](int near, int far) {
        const int to_near = routes.distance(near, s), from_far = routes.distance(far, receiver);
        return to_near >= 0 && from_far >= 0 && to_near + 1 + from_far == d;
      };
      const bool on_path = through(l.a, l.b) || through(l.b, l.a);
      if (on_path && l.rate < capacity) {
        throw ScenarioError(
            "topology", "the fluid model has one bottleneck, the receiver's port (" +
                            rate_text(capacity) + "), but the link between " +
                            topo.nodes[static_cast<size_t>(l.a)].name + " and " +
                            topo.nodes[static_cast<size_t>(l.b)].name + " on the way from host " +
                            std::to_string(s) + " runs at " + rate_text(l.rate));
      }
    }
  }
  if (nic.tx_dma_rate.bps > 0) line = std::min(line, nic.tx_dma_rate);

  const DcqcnConfig& cc = nic.cc.dcqcn;
  const RedMarking red = spec.switches.red_for(capacity);
  const int mtu = static_cast<int>(nic.mtu.count);
  FluidBottleneck b;
  DcqcnFluidParams& p = b.model;
  p.capacity_bps = static_cast<double>(capacity.bps);
  p.flows = static_cast<int>(spec.flows.size());
  p.packet_bytes = roce::data_frame(mtu, false);
  p.kmin_bytes = static_cast<double>(red.kmin);
  p.kmax_bytes = static_cast<double>(red.kmax);
  p.pmax = red.pmax;
  p.g = cc.g();
  // tau: the least spacing of cuts, set by the notification point or the sender's monitor
  // (with rate_reduce_monitor periodic, the model's own window); with ack_echo the monitor's.
  p.tau_s = (cc.ack_echo ? cc.rate_reduce_monitor_period
                         : std::max(cc.min_time_between_cnps, cc.rate_reduce_monitor_period))
                .seconds();
  p.tau_prime_s = cc.dce_tcp_rtt.seconds();
  // A counter that is off never fires: an unreachable period or byte count. The model counts
  // F events of pure fast recovery; fabtwin's default rule (fast_recovery_steps F-1) has F - 1.
  p.timer_s = cc.rpg_time_reset.ps > 0 ? cc.rpg_time_reset.seconds() : 1e9;
  p.byte_counter_bytes = cc.rpg_byte_reset > 0 ? static_cast<double>(cc.rpg_byte_reset) : 1e18;
  p.fast_recovery = cc.fast_recovery_events();
  p.rate_ai_bps = static_cast<double>(cc.rpg_ai_rate.bps);
  for (const FlowSpec& f : spec.flows) {
    b.flows.push_back({f.start.seconds(), std::ceil(static_cast<double>(f.size.count) / mtu)});
  }
  b.line_rate_bps = static_cast<double>(line.bps);
  b.initial_alpha = cc.initial_alpha_value / 1024.0;
  b.receiver = receiver;
  b.switch_node = sw.node;
  b.switch_port = sw.port;
  // The longest unloaded control loop over the senders: a full data frame to the receiver and
  // a CNP back, each hop its wire time and propagation delay (the links taken to be like the
  // receiver's), no queueing.
  int hops = 0;
  for (int s : senders) hops = std::max(hops, routes.distance(s, receiver));
  b.base_rtt = (roce::wire_time(roce::data_frame(mtu, false), capacity) + access->delay) * hops +
               (roce::wire_time(roce::cnp_frame(), capacity) + access->delay) * hops;

  auto note = [&](std::string s) { b.approximations.push_back(std::move(s)); };
  const double byte_counter_time =
      static_cast<double>(cc.rpg_byte_reset) * 8 * p.flows / p.capacity_bps;  // at C/N
  const int f = cc.fast_recovery_events() + 1;  // events until hyper increase
  if (cc.rpg_byte_reset == 0 || cc.rpg_time_reset.ps == 0) {
    note("hyper increase (R_HAI " + rate_text(cc.rpg_hai_rate) +
         ") is not in the equations: with one counter off, the other reaches it after " +
         std::to_string(f) + " events, and the NIC adds R_HAI where the model adds R_AI" +
         (cc.hyper_linear && cc.rpg_hai_rate == cc.rpg_ai_rate ? " (the same step here)" : ""));
  } else {
    note("hyper increase (R_HAI " + rate_text(cc.rpg_hai_rate) +
         ") is not in the equations: once both the timer and the byte counter have counted " +
         std::to_string(f) +
         " events after a cut, the NIC adds R_HAI x stage where the model adds R_AI" +
         (f * byte_counter_time > 10 * cc.rpg_time_reset.seconds()
              ? " (here the byte counter rarely gets there)"
              : " (here the byte counter gets there within milliseconds: the model recovers from "
                "cuts far more slowly than the NIC)"));
  }
  note(std::string(cc.alpha_periodic
                       ? "alpha follows the periodic rule (alpha_update periodic), whose mean the "
                         "equations are, but takes a CNP in a period tau' to be a mark among "
                         "tau' R packets, which over-counts CNPs where tau' is below the CNP "
                         "interval tau"
                       : "alpha rises at each CNP and decays each tau' without one "
                         "(alpha_update on_cnp); the equations average this as a rise in every "
                         "period tau' that holds a mark, the same while tau' is near tau"));
  if (cc.rate_reduce_monitor_period.ps > 0 && !cc.monitor_periodic) {
    note("the NIC merges CNPs that reach it less than rate_reduce_monitor_period (" +
         format_time(cc.rate_reduce_monitor_period) +
         ") apart, which the CNP interval prevents but for jitter on the way back; the model "
         "cuts on each");
  }
  if (!cc.fast_recovery_f) {
    note("fast_recovery_steps F-1: the model is given F - 1 = " +
         std::to_string(cc.fast_recovery_events()) +
         " fast-recovery events, the pure halvings fabtwin's NIC makes (the authors' ns-3)");
  }
  if (!cc.monitor_periodic) {
    note(
        "a cut comes with probability 1 - (1-p)^(tau R) per window tau (slotted); fabtwin's "
        "NIC sends a CNP on the first mark once tau has passed and forgets the marks in between, "
        "which holds the queue above the model's (docs/dcqcn.md; rate_reduce_monitor periodic "
        "with min_time_between_cnps 0us is the slotted rule)");
  }
  note("no PFC, no rate floor (rpg_min_rate " + rate_text(cc.rpg_min_rate) +
       "): the queue may grow past any XOFF threshold and rates fall as low as the cuts take "
       "them");
  note("the queue counts " + std::to_string(roce::data_frame(mtu, false)) +
       "-byte data frames; the preamble and inter-frame gap on the wire are not counted");
  return b;
}

FluidSetup fluid_setup(const FabricSpec& spec, const FluidBottleneck& b,
                       const FluidOptions& options) {
  FluidSetup s;
  s.duration = options.duration.value_or(spec.run.end);
  s.delay = options.delay.value_or(b.base_rtt);
  s.sample = options.sample.value_or(spec.output.rate_sample_interval.ps > 0
                                         ? spec.output.rate_sample_interval
                                         : Time{10'000'000});
  s.step = options.step.value_or(std::min(kFluidStep, s.sample));
  s.after = options.after.value_or(Time{s.duration.ps / 2});
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  require(s.duration.ps > 0, "--duration must be > 0, found " + format_time(s.duration));
  require(s.delay.ps >= 0, "--delay must be >= 0, found " + format_time(s.delay));
  // The sample interval first: the step's default is taken from it.
  require(s.sample.ps > 0 && s.sample <= s.duration,
          "--sample must be > 0 and at most the duration (" + format_time(s.duration) +
              "), found " + format_time(s.sample));
  require(s.step.ps > 0, "--step must be > 0, found " + format_time(s.step));
  require(s.step <= s.sample, "--step must be at most the sample interval (" +
                                  format_time(s.sample) + "), found " + format_time(s.step));
  require(
      s.sample.ps / s.step.ps <= 1'000'000,
      "--step must be at least a millionth of the sample interval, found " + format_time(s.step));
  require(s.duration.ps / s.sample.ps <= 10'000'000, "--sample gives more than 10^7 samples over " +
                                                         format_time(s.duration) + ", found " +
                                                         format_time(s.sample));
  require(s.after.ps >= 0 && s.after < s.duration,
          "--after must be in [0, duration), found " + format_time(s.after));
  DcqcnTrajectoryParams& p = s.params;
  p.model = b.model;
  p.flows = b.flows;
  p.line_rate_bps = b.line_rate_bps;
  p.initial_alpha = b.initial_alpha;
  p.delay_s = s.delay.seconds();
  p.duration_s = s.duration.seconds();
  p.step_s = s.step.seconds();
  p.sample_s = s.sample.seconds();
  return s;
}

}  // namespace fabtwin
