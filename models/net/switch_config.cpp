#include "models/net/switch_config.h"

#include <algorithm>

#include "models/net/pfc.h"
#include "models/net/roce_framing.h"

namespace fabtwin {
namespace {

const nlohmann::json& sub(const nlohmann::json& j, const char* key) {
  static const nlohmann::json none;
  return j.is_object() && j.contains(key) ? j[key] : none;
}

double read_factor(ParamReader& r, const std::string& key) {
  const nlohmann::json v = r.json(key);
  if (v.is_number()) {
    if (v.get<double>() > 0) return v.get<double>();
    throw ScenarioError(r.path_of(key),
                        "expected a positive factor like \"1/8\" or 2, found " + json_text(v));
  }
  if (!v.is_string()) {
    throw ScenarioError(r.path_of(key),
                        "expected a positive factor like \"1/8\" or 2, found " + json_text(v));
  }
  const std::string text = v.get<std::string>();
  const size_t slash = text.find('/');
  try {
    size_t used = 0;
    double v = 0;
    if (slash == std::string::npos) {
      v = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } else {
      size_t used_den = 0;
      const double num = std::stod(text.substr(0, slash), &used);
      const double den = std::stod(text.substr(slash + 1), &used_den);
      if (used != slash || used_den != text.size() - slash - 1 || den <= 0) {
        throw std::invalid_argument(text);
      }
      v = num / den;
    }
    if (!(v > 0)) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw ScenarioError(r.path_of(key),
                        "expected a positive factor like \"1/8\" or \"2\", found \"" + text + "\"");
  }
}

std::vector<int> read_priority_list(ParamReader& r, const std::string& key) {
  const nlohmann::json v = r.json(key);
  std::vector<int> out;
  if (!v.is_array())
    throw ScenarioError(r.path_of(key),
                        "expected a list of priorities 0..7, found " + json_text(v));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number_integer() || v[i].get<int>() < 0 || v[i].get<int>() > 7) {
      throw ScenarioError(r.path_of(key) + "[" + std::to_string(i) + "]",
                          "expected a priority 0..7, found " + json_text(v[i]));
    }
    out.push_back(v[i].get<int>());
  }
  return out;
}

// trust DSCP: every DSCP maps to DSCP / 8 unless the map says otherwise.
void read_dscp_map(ParamReader& r, SwitchConfig& c) {
  for (int d = 0; d < 64; ++d) c.dscp_to_priority[d] = static_cast<uint8_t>(d >> 3);
  const nlohmann::json& map = r.raw("dscp_to_priority");
  if (!map.is_null() && !map.is_object()) {
    throw ScenarioError(r.path_of("dscp_to_priority"),
                        "expected an object like {\"26\": 3}, found " + json_text(map));
  }
  if (!map.is_object()) return;
  for (const auto& [dscp_text, prio] : map.items()) {
    const std::string path = r.path_of("dscp_to_priority") + "." + dscp_text;
    int dscp = -1;
    try {
      size_t used = 0;
      dscp = std::stoi(dscp_text, &used);
      if (used != dscp_text.size()) dscp = -1;
    } catch (const std::exception&) {
    }
    if (dscp < 0 || dscp > 63)
      throw ScenarioError(path, "expected a DSCP 0..63 as the key, found \"" + dscp_text + "\"");
    if (!prio.is_number_integer() || prio.get<int>() < 0 || prio.get<int>() > 7) {
      throw ScenarioError(path, "expected a priority 0..7, found " + json_text(prio));
    }
    c.dscp_to_priority[dscp] = static_cast<uint8_t>(prio.get<int>());
  }
}

void read_weights(ParamReader& r, SwitchConfig& c) {
  const nlohmann::json weights = r.json("weights");
  if (!weights.is_array() || weights.size() != kPriorities) {
    throw ScenarioError(r.path_of("weights"),
                        "expected a list of 8 weights, found " + json_text(weights));
  }
  for (int i = 0; i < kPriorities; ++i) {
    if (!weights[i].is_number_integer() || weights[i].get<int>() < 1) {
      throw ScenarioError(r.path_of("weights") + "[" + std::to_string(i) + "]",
                          "expected a weight >= 1, found " + json_text(weights[i]));
    }
    c.scheduler.weights[i] = weights[i].get<int>();
  }
}

using SwitchParams = BoundParams<SwitchConfig>;

const SwitchParams kBufferParams{
    "fabric.switch",
    "switch",
    "Switch forwarding and shared buffer (MMU)",
    {
        SwitchParams::custom(
            {"forwarding", ParamType::Choice, "\"store_and_forward\"",
             "store_and_forward: a frame may leave once its last bit has arrived; cut_through: "
             "a frame whose egress is idle (free, nothing queued, its priority not paused) starts "
             "port_to_port_latency after its first bits arrived, and falls back to store and "
             "forward when the egress is busy or faster than the ingress link; its buffer is "
             "held until it starts either way",
             "IEEE 802.1Q bridges relay whole frames; cut-through and its fallback rules as "
             "switch vendors document them (docs/references.md §11.3)",
             "store_and_forward|cut_through"},
            [](ParamReader& r, SwitchConfig& c) {
              c.cut_through = r.choice("forwarding") == "cut_through";
            }),
        SwitchParams::field(
            &SwitchConfig::port_to_port_latency,
            {"port_to_port_latency", ParamType::Time, "\"0us\"",
             "switch pipeline latency: from a frame's arrival (its last bit with store and "
             "forward, its first bits with cut-through) to the egress being able to start it; "
             "the frame is admitted to the buffer (PFC, ECN) as it arrives. Data-centre "
             "ASICs quote about 0.3-1 us port to port",
             "fabtwin: 0, a switch that forwards in no time; latency as RFC 1242 defines it "
             "(docs/references.md §11.3)"}),
        SwitchParams::custom(
            {"buffer", ParamType::Bytes, "\"32MB\"", "total packet buffer of each switch",
             "the HPCC and DCQCN ns-3 studies use 32 MB (BUFFER_SIZE); 100GbE ASICs have 16-64 MB"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mmu.buffer = r.bytes("buffer").count;
              if (c.mmu.buffer < 2 * roce::kMinFrameBytes) {
                throw ScenarioError(r.path_of("buffer"),
                                    "expected room for at least two frames, found " +
                                        format_bytes(Bytes{c.mmu.buffer}));
              }
            }),
        SwitchParams::custom(
            {"reserve", ParamType::Bytes, "\"4KB\"",
             "guaranteed buffer per (ingress port, priority group), outside the shared pool",
             "HPCC ns-3 switch MMU: 4 KB per port and queue"},
            [](ParamReader& r, SwitchConfig& c) { c.mmu.reserve = r.bytes("reserve").count; }),
        SwitchParams::custom(
            {"threshold", ParamType::Choice, "\"dynamic\"",
             "lossless groups' shared-buffer limit (and XOFF point): dynamic = alpha x free shared "
             "buffer (Choudhury-Hahne), static = static_xoff",
             "Choudhury and Hahne, IEEE/ACM ToN 6(2), 1998", "dynamic|static"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mmu.dynamic = r.choice("threshold") == "dynamic";
            }),
        SwitchParams::custom(
            {"alpha", ParamType::Factor, "\"1/8\"",
             "dynamic-threshold factor for lossless ingress groups, a number or a power of two "
             "like "
             "\"1/8\"",
             "HPCC ns-3: pfc_a_shift 3 (alpha 1/8) at the NIC rate; SONiC dynamic_th 2^n"},
            [](ParamReader& r, SwitchConfig& c) { c.mmu.alpha = read_factor(r, "alpha"); }),
        SwitchParams::custom(
            {"static_xoff", ParamType::Bytes, "\"256KB\"",
             "static threshold on a lossless group's shared bytes (threshold = static)", "fabtwin"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mmu.static_xoff = r.bytes("static_xoff").count;
            }),
        SwitchParams::custom(
            {"xon_offset", ParamType::Bytes, "\"3KB\"",
             "XON once a paused group's shared bytes are this far below the threshold (hysteresis)",
             "HPCC ns-3 switch MMU resume_offset 3 KB"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mmu.xon_offset = r.bytes("xon_offset").count;
            }),
        SwitchParams::custom(
            {"headroom", ParamType::Text, "\"auto\"",
             "PFC headroom per lossless group and ingress port: auto (mlx5 rule from link speed, "
             "cable length = delay / 5 ns per m, and MTU) or a size like \"100KB\"",
             "NVIDIA mlx5 driver calculate_xoff(): (301 + 2.16 x cable m) x Gb/s + 2.72 x MTU"},
            [](ParamReader& r, SwitchConfig& c) {
              const auto headroom = r.bytes_or("headroom", "auto");
              c.auto_headroom = !headroom;
              c.headroom = headroom ? headroom->count : 0;
            }),
        SwitchParams::custom(
            {"egress_alpha", ParamType::Factor, "\"1\"",
             "dynamic-threshold factor limiting lossy egress queues; beyond it lossy frames drop",
             "Choudhury and Hahne 1998; SONiC default dynamic_th 0 (alpha 1)"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mmu.egress_alpha = read_factor(r, "egress_alpha");
            }),
    }};

using WatchdogParams = BoundParams<PfcWatchdogConfig>;

// SONiC's `pfcwd start_default` (sonic-utilities pfcwd/main.py) is the source of the timers
// and the action; docs/references.md (PFC watchdog).
constexpr int64_t kSonicPollPs = 200'000'000'000;  // 200 ms
// The shortest watchdog poll: every paused port schedules a poll this often.
constexpr Time kMinWatchdogPoll{1'000'000};  // 1 us

const WatchdogParams kWatchdogParams{
    "fabric.pfc.watchdog",
    "pfc",
    "PFC watchdog (pause storm detection and recovery, switches and NICs)",
    {
        WatchdogParams::field(
            &PfcWatchdogConfig::enabled,
            {"enabled", ParamType::Boolean, "false",
             "every switch egress queue and NIC send queue of a lossless priority is watched: "
             "paused continuously for detection_time with frames waiting, it is declared in a "
             "pause storm and ignores pause until the storm is over",
             "fabtwin: off, so that a run shows PFC as configured; SONiC turns it on for "
             "lossless queues (pfcwd start_default)"}),
        WatchdogParams::field(
            &PfcWatchdogConfig::detection_time,
            {"detection_time", ParamType::Time, "\"200ms\"",
             "how long a lossless queue must stay paused, with frames waiting, to be declared "
             "in a pause storm (checked at each poll: detected after detection_time to "
             "detection_time + poll_interval)",
             "SONiC pfcwd default detection time 200 ms"}),
        WatchdogParams::field(
            &PfcWatchdogConfig::restoration_time,
            {"restoration_time", ParamType::Time, "\"200ms\"",
             "a queue in a storm returns to normal PFC once no XOFF has arrived for its priority "
             "for this long (checked at each poll)",
             "SONiC pfcwd default restoration time 200 ms"}),
        WatchdogParams::custom(
            {"poll_interval", ParamType::Text, "\"auto\"",
             "period of the watchdog's checks, on a global grid of its multiples; auto = 200 ms, "
             "or the detection or restoration time if shorter",
             "SONiC pfcwd default polling interval 200 ms; SONiC refuses one longer than a "
             "detection or restoration time"},
            [](ParamReader& r, PfcWatchdogConfig& c) {
              const auto poll = r.time_or("poll_interval", "auto");
              if (poll && *poll < kMinWatchdogPoll) {
                throw ScenarioError(r.path_of("poll_interval"),
                                    "expected at least " + format_time(kMinWatchdogPoll) +
                                        " (a poll is an event per paused port), found " +
                                        format_time(*poll));
              }
              c.poll_interval = poll ? *poll : Time{};  // auto: set by fabric.pfc
            }),
        WatchdogParams::custom(
            {"action", ParamType::Choice, "\"drop\"",
             "what a queue in a storm does: drop = discard the frames queued and every new one "
             "(counted in watchdog_drops); forward = transmit them, ignoring pause",
             "SONiC pfcwd default action drop", "drop|forward"},
            [](ParamReader& r, PfcWatchdogConfig& c) { c.drop = r.choice("action") == "drop"; }),
        WatchdogParams::field(
            &PfcWatchdogConfig::nics,
            {"nics", ParamType::Boolean, "true",
             "the host NICs watch their send queues too (paused by their switch); false: "
             "switches only",
             "fabtwin; ConnectX NICs have a PFC stall timer of their own (mlx5 "
             "pfc-prevention-tout)"}),
    },
    [](ParamReader& r, const PfcWatchdogConfig& c) {
      for (const auto& [key, t] : {std::pair{"detection_time", c.detection_time},
                                   std::pair{"restoration_time", c.restoration_time}}) {
        if (t.ps <= 0) {
          throw ScenarioError(r.path_of(key), "expected a positive time, found " + format_time(t));
        }
      }
    }};

const SwitchParams kPfcParams{
    "fabric.pfc",
    "pfc",
    "Priority flow control (IEEE 802.1Qbb)",
    {
        SwitchParams::field(
            &SwitchConfig::pfc,
            {"enabled", ParamType::Boolean, "true",
             "switches send PAUSE for lossless priorities; every port honours PAUSE it receives",
             "RoCEv2 deployments run PFC on the RDMA class"}),
        SwitchParams::custom(
            {"lossless_priorities", ParamType::List, "[3]",
             "priorities treated as lossless (admitted at ingress with headroom, never dropped)",
             "priority 3 is the customary RoCE class (NVIDIA, SONiC defaults)"},
            [](ParamReader& r, SwitchConfig& c) {
              for (int prio : read_priority_list(r, "lossless_priorities"))
                c.mmu.lossless[prio] = c.pfc;
            }),
        SwitchParams::field(
            &SwitchConfig::pause_quanta,
            {"pause_quanta", ParamType::Integer, "65535",
             "pause time an XOFF frame asks for, in quanta of 512 bit times (65535 = 335.5 us at "
             "100 Gb/s)",
             "IEEE 802.1Qbb; switches commonly send the maximum and refresh it", "1..65535"}),
        SwitchParams::custom({"refresh_interval", ParamType::Text, "\"auto\"",
                              "while a group stays over its threshold its XOFF is re-sent this "
                              "often; auto = half the "
                              "pause time at the port's speed",
                              "fabtwin; refreshing before expiry keeps a pause continuous"},
                             [](ParamReader& r, SwitchConfig& c) {
                               const auto refresh = r.time_or("refresh_interval", "auto");
                               c.auto_refresh = !refresh;
                               c.pause_refresh = refresh ? *refresh : Time{};
                               if (refresh && refresh->ps <= 0) {
                                 throw ScenarioError(
                                     r.path_of("refresh_interval"),
                                     "expected a positive time, found " + format_time(*refresh));
                               }
                             }),
        SwitchParams::custom(
            {"watchdog", ParamType::List, "{}",
             "the PFC watchdog; see fabric.pfc.watchdog (fabtwin describe pfc)", "fabtwin"},
            [](ParamReader& r, SwitchConfig& c) {
              PfcWatchdogConfig& w = c.watchdog;
              w = kWatchdogParams.read(r.raw("watchdog"), r.path_of("watchdog"));
              if (w.poll_interval.ps == 0) {  // auto: no longer than either time (SONiC's rule)
                w.poll_interval =
                    std::min({Time{kSonicPollPs}, w.detection_time, w.restoration_time});
                if (w.enabled && w.poll_interval < kMinWatchdogPoll) {
                  throw ScenarioError(r.path_of("watchdog") + ".poll_interval",
                                      "expected at least " + format_time(kMinWatchdogPoll) +
                                          ": auto polls every min(detection_time, "
                                          "restoration_time) = " +
                                          format_time(w.poll_interval) +
                                          "; give a longer time or a poll_interval");
                }
              }
            }),
    }};

void check_red(ParamReader& r, const RedMarking& red) {
  if (red.kmin > red.kmax) {
    throw ScenarioError(r.path_of("kmin"), "expected kmin <= kmax, found kmin " +
                                               format_bytes(Bytes{red.kmin}) + " > kmax " +
                                               format_bytes(Bytes{red.kmax}));
  }
}

const BoundParams<RedMarking> kEcnRateParams{
    "fabric.ecn.by_rate.RATE",
    "ecn",
    "ECN marking for one link speed",
    {
        BoundParams<RedMarking>::field(
            &RedMarking::kmin,
            {"kmin", ParamType::Bytes, "", "queue depth below which nothing is marked", "fabtwin"}),
        BoundParams<RedMarking>::field(
            &RedMarking::kmax,
            {"kmax", ParamType::Bytes, "", "queue depth at and above which every packet is marked",
             "fabtwin"}),
        BoundParams<RedMarking>::field(
            &RedMarking::pmax,
            {"pmax", ParamType::Probability, "", "marking probability just below kmax", "fabtwin"}),
    },
    check_red};

const SwitchParams kEcnParams{
    "fabric.ecn",
    "ecn",
    "ECN marking (RED on egress queue depth)",
    {
        SwitchParams::field(&SwitchConfig::ecn, {"enabled", ParamType::Boolean, "true",
                                                 "mark ECN-capable packets CE at switch egress",
                                                 "DCQCN congestion point"}),
        SwitchParams::custom(
            {"kmin", ParamType::Bytes, "\"5KB\"", "queue depth below which nothing is marked",
             "DCQCN (Zhu et al., SIGCOMM 2015) as restated in the authors' CoNEXT 2016 code"},
            [](ParamReader& r, SwitchConfig& c) { c.red.kmin = r.bytes("kmin").count; }),
        SwitchParams::custom(
            {"kmax", ParamType::Bytes, "\"200KB\"",
             "queue depth at and above which every packet is marked",
             "DCQCN default Kmax = 200 KB (CoNEXT 2016 text)"},
            [](ParamReader& r, SwitchConfig& c) { c.red.kmax = r.bytes("kmax").count; }),
        SwitchParams::custom(
            {"pmax", ParamType::Probability, "0.01", "marking probability just below kmax",
             "DCQCN fluid-model code: pmax = 1%"},
            [](ParamReader& r, SwitchConfig& c) { c.red.pmax = r.probability("pmax"); }),
        SwitchParams::custom(
            {"mark_at", ParamType::Choice, "\"dequeue\"",
             "judge the queue depth when a packet leaves (dequeue) or joins (enqueue) the queue",
             "DCQCN and most ASICs mark at dequeue", "dequeue|enqueue"},
            [](ParamReader& r, SwitchConfig& c) {
              c.mark_at_enqueue = r.choice("mark_at") == "enqueue";
            }),
        SwitchParams::custom(
            {"by_rate", ParamType::List, "{}",
             "per-link-speed settings, e.g. {\"100Gbps\": {\"kmin\": \"400KB\", \"kmax\": "
             "\"1600KB\", \"pmax\": 0.2}}; ports of other speeds use kmin/kmax/pmax",
             "HPCC ns-3 config: 25G 100/400 KB, 50G 200/800 KB, 100G 400/1600 KB, pmax 0.2"},
            [](ParamReader& r, SwitchConfig& c) {
              const nlohmann::json& by_rate = r.raw("by_rate");
              if (!by_rate.is_null() && !by_rate.is_object()) {
                throw ScenarioError(
                    r.path_of("by_rate"),
                    "expected an object of link rates, found " + json_text(by_rate));
              }
              if (!by_rate.is_object()) return;
              for (const auto& [rate_text, settings] : by_rate.items()) {
                const std::string path = r.path_of("by_rate") + "." + rate_text;
                BitsPerSec rate;
                try {
                  rate = parse_rate(rate_text);
                } catch (const UnitError& err) {
                  throw ScenarioError(path, err.what());
                }
                c.red_by_rate[rate.bps] = kEcnRateParams.read(settings, path);
              }
            }),
    },
    [](ParamReader& r, const SwitchConfig& c) { check_red(r, c.red); }};

const SwitchParams kQosParams{
    "fabric.qos",
    "qos",
    "QoS: classification and egress scheduling",
    {
        SwitchParams::custom(
            {"dscp_to_priority", ParamType::List, "{}",
             "trust DSCP: map of DSCP (0..63, as a string key) to priority; unlisted DSCPs map to "
             "DSCP / 8",
             "Linux/ConnectX default dscp2prio is DSCP >> 3 (26 -> 3, 48 -> 6)"},
            read_dscp_map),
        SwitchParams::custom(
            {"strict_priorities", ParamType::List, "[6, 7]",
             "priorities served strictly before the others (control traffic such as CNPs)",
             "ConnectX sends CNPs on priority 6 (cnp_802p_prio)"},
            [](ParamReader& r, SwitchConfig& c) {
              for (int prio : read_priority_list(r, "strict_priorities"))
                c.scheduler.strict_mask |= static_cast<uint8_t>(1u << prio);
            }),
        SwitchParams::custom({"weights", ParamType::List, "[1, 1, 1, 1, 1, 1, 1, 1]",
                              "DWRR weights of priorities 0..7 among the non-strict queues",
                              "fabtwin (equal shares)"},
                             read_weights),
        SwitchParams::custom(
            {"quantum", ParamType::Bytes, "\"9216B\"",
             "DWRR credit per unit of weight per round (at least one jumbo frame)", "fabtwin"},
            [](ParamReader& r, SwitchConfig& c) {
              c.scheduler.quantum = static_cast<int>(r.bytes("quantum").count);
              if (c.scheduler.quantum < 1)
                throw ScenarioError(r.path_of("quantum"), "expected a positive size");
            }),
    }};

}  // namespace

const std::vector<const ParamGroup*>& switch_param_groups() {
  static const std::vector<const ParamGroup*> groups{&kBufferParams.group(),   &kPfcParams.group(),
                                                     &kWatchdogParams.group(), &kEcnParams.group(),
                                                     &kEcnRateParams.group(),  &kQosParams.group()};
  return groups;
}

int64_t SwitchConfig::port_headroom(BitsPerSec rate, Time delay) const {
  return auto_headroom ? pfc::mlx5_headroom(rate, delay, headroom_mtu) : headroom;
}

SwitchConfig read_switch_config(const nlohmann::json& scenario, int64_t mtu_frame) {
  const nlohmann::json& fabric = sub(scenario, "fabric");
  SwitchConfig c{};
  c.headroom_mtu = mtu_frame;
  kBufferParams.read_into(sub(fabric, "switch"), "fabric.switch", c);
  kPfcParams.read_into(sub(fabric, "pfc"), "fabric.pfc", c);
  kEcnParams.read_into(sub(fabric, "ecn"), "fabric.ecn", c);
  kQosParams.read_into(sub(fabric, "qos"), "fabric.qos", c);
  return c;
}

}  // namespace fabtwin
