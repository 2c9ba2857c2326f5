#include "models/traffic/traffic.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "models/traffic/flow_size_cdf.h"
#include "sim/rng.h"

namespace fabtwin {
namespace {

const Param kDscp{"dscp",
                  ParamType::Integer,
                  "26",
                  "DSCP of the flows' data and ACKs; fabric.qos.dscp_to_priority maps it to a "
                  "priority (26 -> 3 by default)",
                  "DSCP 26 on priority 3 is the usual lossless RoCE class (NVIDIA guidance)",
                  "0..63"};
const Param kVerb{"verb",
                  ParamType::Choice,
                  "\"write\"",
                  "RC operation of the messages: write (RDMA WRITE: a RETH on the first packet, "
                  "no receive WQE) or send (SEND: no RETH; consumes a receive WQE at the "
                  "destination, RNR NAK when none is posted; see nic.receive_queue_depth)",
                  "InfiniBand Architecture Specification vol. 1 (RC SEND and RDMA WRITE); "
                  "perftest's ib_write_bw and ib_send_bw",
                  "write|send"};
const Param kStart{"start", ParamType::Time, "\"0us\"", "when the flows start", "fabtwin"};
const Param kType{"type",    ParamType::Choice,
                  "",        "generator type",
                  "fabtwin", "flows|incast|permutation|all_to_all|poisson"};

const ParamGroup kFlowsParams{
    "traffic[type=flows]",
    "flows",
    "Explicit flows",
    {kType,
     {"flows", ParamType::List, "", "list of {src, dst, size, start, dscp}", "fabtwin"},
     kVerb}};
const ParamGroup kFlowEntryParams{
    "traffic[type=flows].flows[]",
    "flows",
    "One explicit flow",
    {{"src", ParamType::Integer, "", "sending host index", "fabtwin", "0.."},
     {"dst", ParamType::Integer, "", "receiving host index", "fabtwin", "0.."},
     {"size", ParamType::Bytes, "", "message size", "fabtwin"},
     kStart,
     kDscp}};
const ParamGroup kIncastParams{
    "traffic[type=incast]",
    "incast",
    "N-to-1 incast",
    {kType,
     {"receiver", ParamType::Integer, "0", "host all senders write to", "fabtwin", "0.."},
     {"senders", ParamType::List, "(all other hosts)",
      "a count n (the n hosts after the receiver, wrapping) or a list of host indices", "fabtwin"},
     {"size", ParamType::Bytes, "", "message size per sender", "fabtwin"},
     kStart,
     kDscp,
     kVerb}};
const ParamGroup kPermutationParams{
    "traffic[type=permutation]",
    "permutation",
    "Random permutation",
    {kType,
     {"size", ParamType::Bytes, "", "message size per host", "fabtwin"},
     kStart,
     kDscp,
     kVerb}};
const ParamGroup kAllToAllParams{
    "traffic[type=all_to_all]",
    "all_to_all",
    "All-to-all",
    {kType,
     {"size", ParamType::Bytes, "", "message size per ordered host pair", "fabtwin"},
     kStart,
     kDscp,
     kVerb}};
const ParamGroup kPoissonParams{
    "traffic[type=poisson]",
    "poisson",
    "Poisson arrivals, sizes from a flow-size CDF",
    {kType,
     {"cdf", ParamType::Text, "\"websearch\"",
      "flow-size distribution: websearch, datamining, fb-hadoop, alistorage-2019, "
      "google-rpc-2008 (shipped in scenarios/flow-size-cdfs) or a file path relative to the "
      "scenario",
      "see scenarios/flow-size-cdfs/README.md"},
     {"load", ParamType::Probability, "0.5",
      "offered load as a fraction of each host's link rate; sources and destinations are uniform",
      "fabtwin; the HPCC and DCQCN studies sweep 0.3-0.8"},
     {"duration", ParamType::Time, "",
      "arrivals are generated from start for this long (those at or after run.end are not: "
      "they could not start)",
      "fabtwin"},
     kStart,
     kDscp,
     kVerb}};

struct Context {
  const Topology& topology;
  std::vector<FlowSpec>& flows;
  Rng rng;
  uint32_t generator;  // index of the traffic entry
  Time horizon;        // the run's end: a flow that would start at or after it never does
};

int read_host(ParamReader& r, const std::string& key, const Topology& t) {
  const int64_t h = r.integer(key);
  if (h >= t.hosts) {
    throw ScenarioError(r.path_of(key), "expected a host index 0.." + std::to_string(t.hosts - 1) +
                                            ", found " + std::to_string(h));
  }
  return static_cast<int>(h);
}

// The generator's verb (an explicit flow takes its generator's).
Verb read_verb(ParamReader& r) {
  return r.choice("verb") == "send" ? Verb::Send : Verb::Write;
}

void add_flow(Context& c, int src, int dst, Bytes size, Time start, int dscp, Verb verb) {
  c.flows.push_back(
      {static_cast<uint32_t>(c.flows.size()), src, dst, size, start, dscp, c.generator, verb});
}

void explicit_flows(ParamReader& r, Context& c) {
  const Verb verb = read_verb(r);
  const nlohmann::json& list = r.raw("flows");
  if (!list.is_array()) {
    throw ScenarioError(r.path_of("flows"), "expected a list of flows, found " + json_text(list));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    ParamReader f(list[i], r.path_of("flows") + "[" + std::to_string(i) + "]", kFlowEntryParams);
    const int src = read_host(f, "src", c.topology);
    const int dst = read_host(f, "dst", c.topology);
    if (src == dst)
      throw ScenarioError(f.path_of("dst"),
                          "expected a host other than src, found " + std::to_string(dst));
    const Bytes size = f.bytes("size");
    add_flow(c, src, dst, size, f.time("start"), static_cast<int>(f.integer("dscp")), verb);
    f.finish();
  }
}

void incast(ParamReader& r, Context& c) {
  const int receiver = read_host(r, "receiver", c.topology);
  const int hosts = c.topology.hosts;
  std::vector<int> senders;
  const nlohmann::json& s = r.raw("senders");
  if (s.is_null()) {
    for (int k = 1; k < hosts; ++k) senders.push_back((receiver + k) % hosts);
  } else if (s.is_number_integer()) {
    const int64_t n = s.get<int64_t>();
    if (n < 1 || n > hosts - 1) {
      throw ScenarioError(
          r.path_of("senders"),
          "expected a sender count 1.." + std::to_string(hosts - 1) + ", found " + json_text(s));
    }
    for (int k = 1; k <= n; ++k) senders.push_back((receiver + k) % hosts);
  } else if (s.is_array()) {
    for (size_t i = 0; i < s.size(); ++i) {
      const std::string path = r.path_of("senders") + "[" + std::to_string(i) + "]";
      if (!s[i].is_number_integer() || s[i].get<int64_t>() < 0 || s[i].get<int64_t>() >= hosts ||
          s[i].get<int64_t>() == receiver) {
        throw ScenarioError(path, "expected a host index 0.." + std::to_string(hosts - 1) +
                                      " other than the receiver, found " + json_text(s[i]));
      }
      senders.push_back(s[i].get<int>());
    }
  } else {
    throw ScenarioError(r.path_of("senders"),
                        "expected a count or a list of hosts, found " + json_text(s));
  }
  const Bytes size = r.bytes("size");
  const Time start = r.time("start");
  const int dscp = static_cast<int>(r.integer("dscp"));
  const Verb verb = read_verb(r);
  for (int src : senders) add_flow(c, src, receiver, size, start, dscp, verb);
}

void permutation(ParamReader& r, Context& c) {
  const int n = c.topology.hosts;
  std::vector<int> dst(n);
  std::iota(dst.begin(), dst.end(), 0);
  for (int i = n - 1; i > 0; --i) std::swap(dst[i], dst[c.rng.below(i + 1)]);
  for (int i = 0; i < n; ++i) {  // no host sends to itself
    if (dst[i] == i) std::swap(dst[i], dst[(i + 1) % n]);
  }
  const Bytes size = r.bytes("size");
  const Time start = r.time("start");
  const int dscp = static_cast<int>(r.integer("dscp"));
  const Verb verb = read_verb(r);
  for (int i = 0; i < n; ++i) add_flow(c, i, dst[i], size, start, dscp, verb);
}

void all_to_all(ParamReader& r, Context& c) {
  const Bytes size = r.bytes("size");
  const Time start = r.time("start");
  const int dscp = static_cast<int>(r.integer("dscp"));
  const Verb verb = read_verb(r);
  for (int s = 0; s < c.topology.hosts; ++s) {
    for (int d = 0; d < c.topology.hosts; ++d) {
      if (s != d) add_flow(c, s, d, size, start, dscp, verb);
    }
  }
}

void poisson(ParamReader& r, Context& c, const std::filesystem::path& scenario_dir) {
  const std::string name = r.text("cdf");
  const bool is_path = name.find('/') != std::string::npos || name.find('.') != std::string::npos;
  const std::filesystem::path file =
      is_path ? scenario_dir / name : shipped_cdf_dir() / (name + ".txt");
  FlowSizeCdf cdf;
  try {
    cdf = FlowSizeCdf::load(file);
  } catch (const std::runtime_error& e) {
    throw ScenarioError(r.path_of("cdf"), e.what());
  }
  const double load = r.probability("load");
  if (load <= 0) throw ScenarioError(r.path_of("load"), "expected a load above 0, found 0");
  const Time duration = r.time("duration");
  const Time start = r.time("start");
  const int dscp = static_cast<int>(r.integer("dscp"));
  const Verb verb = read_verb(r);
  const int hosts = c.topology.hosts;
  // Host link rate: the rate of the link each host hangs off (the first one found).
  double host_rate = 0;
  for (const Link& l : c.topology.links) {
    if (l.a < hosts || l.b < hosts) {
      host_rate = static_cast<double>(l.rate.bps);
      break;
    }
  }
  // Aggregate arrivals per picosecond so that each host offers `load` of its link on average.
  const double per_ps = load * host_rate * hosts / (8.0 * cdf.mean()) * 1e-12;
  double t = static_cast<double>(start.ps);
  const double end = std::min(static_cast<double>(start.ps) + static_cast<double>(duration.ps),
                              static_cast<double>(c.horizon.ps));
  const double expected = per_ps * std::max(0.0, end - t);
  if (expected > static_cast<double>(kMaxPoissonFlows)) {
    char text[160];
    std::snprintf(text, sizeof text,
                  "about %.3g flows would arrive before the run ends, more than the %.3g one run "
                  "holds: shorten duration or run.end, or lower load",
                  expected, static_cast<double>(kMaxPoissonFlows));
    throw ScenarioError(r.path_of("duration"), text);
  }
  for (;;) {
    t += c.rng.exponential(1.0 / per_ps);
    if (t >= end) break;
    const int src = static_cast<int>(c.rng.below(hosts));
    int dst = static_cast<int>(c.rng.below(hosts - 1));
    if (dst >= src) ++dst;
    add_flow(c, src, dst, Bytes{cdf.sample(c.rng)}, Time{static_cast<int64_t>(t)}, dscp, verb);
  }
}

}  // namespace

const std::vector<const ParamGroup*>& traffic_param_groups() {
  static const std::vector<const ParamGroup*> groups{&kFlowsParams,    &kFlowEntryParams,
                                                     &kIncastParams,   &kPermutationParams,
                                                     &kAllToAllParams, &kPoissonParams};
  return groups;
}

std::vector<FlowSpec> generate_traffic(const nlohmann::json& scenario, const Topology& topology,
                                       uint64_t seed, const std::filesystem::path& scenario_dir,
                                       Time horizon) {
  std::vector<FlowSpec> flows;
  if (!scenario.contains("traffic")) return flows;
  const nlohmann::json& list = scenario["traffic"];
  if (!list.is_array()) {
    throw ScenarioError("traffic", "expected a list of generators, found " + json_text(list));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = "traffic[" + std::to_string(i) + "]";
    const nlohmann::json& g = list[i];
    if (!g.is_object() || !g.contains("type") || !g["type"].is_string()) {
      throw ScenarioError(path,
                          "expected an object with a \"type\" (flows, incast, permutation, "
                          "all_to_all, poisson, collective), found " +
                              json_text(g));
    }
    const std::string type = g["type"].get<std::string>();
    if (type == "collective") continue;  // GPU nodes run these (read_collectives)
    // Generator i draws from stream 2^40 + i, apart from every component's stream.
    Context c{topology, flows, Rng(seed, (uint64_t{1} << 40) + i), static_cast<uint32_t>(i),
              horizon};
    const ParamGroup* group = type == "flows"         ? &kFlowsParams
                              : type == "incast"      ? &kIncastParams
                              : type == "permutation" ? &kPermutationParams
                              : type == "all_to_all"  ? &kAllToAllParams
                              : type == "poisson"     ? &kPoissonParams
                                                      : nullptr;
    if (!group) {
      throw ScenarioError(path + ".type",
                          "expected one of flows, incast, permutation, all_to_all, "
                          "poisson, collective, found " +
                              json_text(g["type"]));
    }
    ParamReader r(g, path, *group);
    r.choice("type");
    if (type == "flows") explicit_flows(r, c);
    if (type == "incast") incast(r, c);
    if (type == "permutation") permutation(r, c);
    if (type == "all_to_all") all_to_all(r, c);
    if (type == "poisson") poisson(r, c, scenario_dir);
    r.finish();
  }
  return flows;
}

}  // namespace fabtwin
