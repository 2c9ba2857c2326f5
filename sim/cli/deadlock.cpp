#include "sim/cli/deadlock.h"

#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <iostream>
#include <sstream>
#include <thread>

#include "sim/atomic_file.h"
#include "sim/cli/scenario_command.h"
#include "sim/scenario_file.h"
#include "sim/utf8_text.h"

namespace fabtwin {

namespace {

namespace po = boost::program_options;

std::string node_name(const Topology& t, int node) {
  return t.nodes[node].name;
}

std::string link_name(const Topology& t, int link) {
  const Link& l = t.links[link];
  return node_name(t, l.a) + "-" + node_name(t, l.b);
}

std::string links_name(const Topology& t, const std::vector<int>& links) {
  std::string s;
  for (const int l : links) {
    if (!s.empty()) s += " + ";
    s += link_name(t, l);
  }
  return s;
}

// "3 host pairs without a route (h0->h5, ...)", or empty when every host reaches every other.
std::string unreachable_text(const Topology& t, const std::vector<std::pair<int, int>>& pairs) {
  if (pairs.empty()) return {};
  std::string s = std::to_string(pairs.size()) + " host pair" + (pairs.size() == 1 ? "" : "s") +
                  " without a route (";
  constexpr size_t kShown = 3;
  for (size_t i = 0; i < std::min(pairs.size(), kShown); ++i) {
    s += (i ? ", " : "") + node_name(t, pairs[i].first) + "->" + node_name(t, pairs[i].second);
  }
  return s + (pairs.size() > kShown ? ", ...)" : ")");
}

DependencyAnalysis analyse(const Topology& topology, const RoutingTable& routes,
                           const std::array<bool, kDependencyPriorities>& lossless,
                           const std::vector<bool>& link_up, const std::vector<int>& injected,
                           std::span<const TrafficPath> traffic, size_t report,
                           size_t count_limit) {
  const BufferDependencyGraph graph(topology, route_view(routes), lossless, link_up, injected);
  DependencyAnalysis a;
  a.groups_with_edges = graph.groups_with_edges();
  a.edges = static_cast<int>(graph.edges().size());
  if (!graph.has_cycle()) return a;
  const CycleSearch search = graph.cycles(report, count_limit);
  a.cycles_found = search.found;
  a.capped = search.capped;
  for (const DependencyCycle& c : search.cycles) {
    CycleReport r;
    for (const int v : c.vertices) r.groups.push_back(graph.group(v));
    for (const int e : c.edges) r.out_ports.push_back(graph.edges()[e].out_port);
    r.labels = graph.explain(c.edges, traffic);
    a.cycles.push_back(std::move(r));
  }
  return a;
}

// Every set of `down` switch-to-switch links, in lexicographic order of link index.
std::vector<std::vector<int>> failure_sets(const std::vector<int>& links, int down) {
  std::vector<std::vector<int>> sets;
  for (size_t i = 0; i < links.size(); ++i) {
    if (down == 1) {
      sets.push_back({links[i]});
      continue;
    }
    for (size_t j = i + 1; j < links.size(); ++j) sets.push_back({links[i], links[j]});
  }
  return sets;
}

std::vector<int> priorities_of(const CycleReport& c) {
  std::vector<int> p;
  for (const IngressGroup& g : c.groups) p.push_back(g.priority);
  std::sort(p.begin(), p.end());
  p.erase(std::unique(p.begin(), p.end()), p.end());
  return p;
}

std::string join(const std::vector<int>& v, const char* sep = ",") {
  std::string s;
  for (const int x : v) {
    if (!s.empty()) s += sep;
    s += std::to_string(x);
  }
  return s;
}

// "s1 in 2 (from s0) p3"
std::string group_text(const Topology& t, const IngressGroup& g) {
  return node_name(t, g.node) + " in " + std::to_string(g.port) + " (from " +
         node_name(t, t.peer(g.node, g.port).node) + ") p" + std::to_string(g.priority);
}

std::string path_text(const Topology& t, const TrafficPath& p, bool ack) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict) on a literal + temporary string here.
  std::string s = p.collective ? "connection " : "flow ";
  s += std::to_string(p.id);
  if (p.collective) {
    s += " of collective ";
    s += std::to_string(p.generator);
  }
  s += ' ';
  s += node_name(t, p.src);
  s += "->";
  s += node_name(t, p.dst);
  if (ack) s += " (its ACKs)";
  return s;
}

void print_cycle(const CycleReport& c, size_t index, size_t shown, const Topology& t,
                 std::span<const TrafficPath> traffic, const std::string& indent,
                 std::ostream& out) {
  constexpr size_t kNames = 12, kPaths = 6;
  const std::vector<int> prios = priorities_of(c);
  out << indent << "cycle " << index + 1 << " of " << shown << ": " << c.groups.size()
      << " ingress groups, priorit" << (prios.size() > 1 ? "ies " : "y ") << join(prios) << "\n";
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const IngressGroup& to = c.groups[(i + 1) % c.groups.size()];
    out << indent << "  " << group_text(t, c.groups[i]) << "  --port " << c.out_ports[i] << "-->  "
        << group_text(t, to) << "\n";
    const EdgeLabel& l = c.labels[i];
    out << indent << "      destinations (" << l.destinations.size() << "):";
    for (size_t k = 0; k < std::min(l.destinations.size(), kNames); ++k) {
      out << " " << node_name(t, l.destinations[k]);
    }
    if (l.destinations.size() > kNames) out << " ... " << l.destinations.size() - kNames << " more";
    out << "\n" << indent << "      traffic (" << l.uses.size() << "):";
    if (l.uses.empty()) out << " none of the scenario's flows";
    for (size_t k = 0; k < std::min(l.uses.size(), kPaths); ++k) {
      out << (k ? ", " : " ") << path_text(t, traffic[l.uses[k].path], l.uses[k].ack);
    }
    if (l.uses.size() > kPaths) out << " ... " << l.uses.size() - kPaths << " more";
    out << "\n";
  }
}

std::string count_text(const DependencyAnalysis& a) {
  return std::to_string(a.cycles_found) + (a.capped ? " or more (count stopped there)" : "");
}

nlohmann::json cycle_json(const CycleReport& c, const Topology& t,
                          std::span<const TrafficPath> traffic) {
  nlohmann::json groups = nlohmann::json::array(), edges = nlohmann::json::array();
  for (const IngressGroup& g : c.groups) {
    const PortPeer& from = t.peer(g.node, g.port);
    groups.push_back({{"switch", node_name(t, g.node)},
                      {"port", g.port},
                      {"peer", node_name(t, from.node)},
                      {"peer_port", from.port},
                      {"priority", g.priority}});
  }
  for (size_t i = 0; i < c.groups.size(); ++i) {
    const size_t next = (i + 1) % c.groups.size();
    const EdgeLabel& l = c.labels[i];
    nlohmann::json dsts = nlohmann::json::array(), flows = nlohmann::json::array(),
                   connections = nlohmann::json::array();
    for (const int d : l.destinations) dsts.push_back(node_name(t, d));
    for (const EdgeUse& u : l.uses) {
      const TrafficPath& p = traffic[u.path];
      nlohmann::json j{{"src", node_name(t, p.src)},
                       {"dst", node_name(t, p.dst)},
                       {"priority", p.priority},
                       {"direction", u.ack ? "ack" : "data"}};
      if (p.collective) {
        j["connection"] = p.id;
        j["collective"] = p.generator;
        connections.push_back(std::move(j));
      } else {
        j["id"] = p.id;
        j["generator"] = p.generator;
        flows.push_back(std::move(j));
      }
    }
    edges.push_back({{"from", i},
                     {"to", next},
                     {"switch", node_name(t, c.groups[i].node)},
                     {"out_port", c.out_ports[i]},
                     {"next", node_name(t, c.groups[next].node)},
                     {"priority", c.groups[next].priority},
                     {"destinations", std::move(dsts)},
                     {"flows", std::move(flows)},
                     {"connections", std::move(connections)}});
  }
  return {{"length", c.groups.size()},
          {"priorities", priorities_of(c)},
          {"groups", std::move(groups)},
          {"edges", std::move(edges)}};
}

nlohmann::json analysis_json(const DependencyAnalysis& a, const Topology& t,
                             std::span<const TrafficPath> traffic) {
  nlohmann::json cycles = nlohmann::json::array();
  for (const CycleReport& c : a.cycles) cycles.push_back(cycle_json(c, t, traffic));
  return {{"groups_with_edges", a.groups_with_edges},
          {"edges", a.edges},
          {"cycles_found", a.cycles_found},
          {"cycles_capped", a.capped},
          {"cycles", std::move(cycles)}};
}

}  // namespace

RouteFunction policy_routes(const Topology& topology, const RoutingPolicy& policy) {
  return [&topology, &policy](const std::vector<bool>& link_up) {
    return compute_routes(topology, policy, link_up);
  };
}

bool StaticDeadlockReport::cycle_found() const {
  if (whole.cycles_found > 0) return true;
  for (const FailureCase& c : scheduled) {
    if (c.analysis.cycles_found > 0) return true;
  }
  for (const FailureLevel& level : failures) {
    if (level.cases_with_cycles > 0) return true;
  }
  return false;
}

StaticDeadlockReport analyse_deadlocks(const FabricSpec& spec, const RouteFunction& routes,
                                       const DeadlockOptions& options) {
  const Topology& t = spec.topology;
  StaticDeadlockReport report;
  for (int p = 0; p < kDependencyPriorities; ++p)
    report.lossless[p] = spec.switches.mmu.lossless[p];
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    if (t.nodes[l.a].kind == NodeKind::Switch && t.nodes[l.b].kind == NodeKind::Switch) {
      report.switch_links.push_back(static_cast<int>(i));
    }
  }
  report.traffic = traffic_paths(spec);
  const std::vector<bool> all_up(t.links.size(), true);
  // The priorities hosts send on: the scenario's traffic (data and ACKs, and the CNPs of
  // DCQCN), or any priority when asked or when the scenario has no traffic.
  if (!options.any_priority && !report.traffic.empty()) {
    for (const TrafficPath& p : report.traffic) report.injected.push_back(p.priority);
    if (const DcqcnConfig* np = spec.nic.cc.notification_point()) {
      report.injected.push_back(spec.nic.dscp_to_priority[static_cast<uint8_t>(np->cnp_dscp)]);
    }
    std::sort(report.injected.begin(), report.injected.end());
    report.injected.erase(std::unique(report.injected.begin(), report.injected.end()),
                          report.injected.end());
  }
  report.whole = analyse(t, routes(all_up), report.lossless, all_up, report.injected,
                         report.traffic, options.max_cycles, options.count_limit);
  auto analyse_case = [&](FailureCase& c, const std::vector<bool>& link_up, size_t shown,
                          size_t limit) {
    const RoutingTable table = routes(link_up);
    c.unroutable = unreachable_text(t, table.unreachable());
    c.analysis =
        analyse(t, table, report.lossless, link_up, report.injected, report.traffic, shown, limit);
  };
  // The scenario's own link events: the state after each instant at which links change.
  std::vector<bool> link_up = all_up;
  for (size_t i = 0; i < spec.events.size();) {
    const Time at = spec.events[i].at;
    for (; i < spec.events.size() && spec.events[i].at == at; ++i) {
      link_up[spec.events[i].link] = spec.events[i].up;
    }
    FailureCase c;
    c.at = at;
    for (size_t l = 0; l < link_up.size(); ++l) {
      if (!link_up[l]) c.links.push_back(static_cast<int>(l));
    }
    analyse_case(c, link_up, options.max_cycles, options.count_limit);
    report.scheduled.push_back(std::move(c));
  }

  for (int down = 1; down <= options.failures; ++down) {
    FailureLevel level;
    level.links_down = down;
    const std::vector<std::vector<int>> sets = failure_sets(report.switch_links, down);
    level.cases = sets.size();
    std::vector<FailureCase> cases(sets.size());
    // Cases are independent; each writes only its own slot, so the order is the case order.
    // TBB runs the bodies after this point and returns after the last, ordered inside libtbb
    // where ThreadSanitizer cannot see it (`make tsan`): the two atomics state that order in
    // code it sees, one atomic operation per case.
    std::atomic<size_t> started{0}, finished{0};
    started.store(1, std::memory_order_release);
    tbb::parallel_for(size_t{0}, sets.size(), [&](size_t i) {
      (void)started.load(std::memory_order_acquire);
      FailureCase& c = cases[i];
      c.links = sets[i];
      std::vector<bool> link_up = all_up;
      for (const int l : c.links) link_up[l] = false;
      analyse_case(c, link_up, options.failure_cycles, options.failure_limit);
      finished.fetch_add(1, std::memory_order_release);
    });
    (void)finished.load(std::memory_order_acquire);
    for (FailureCase& c : cases) {
      if (!c.unroutable.empty()) ++level.unroutable_cases;
      if (c.analysis.cycles_found > 0) ++level.cases_with_cycles;
      if (!c.unroutable.empty() || c.analysis.cycles_found > 0) {
        level.listed.push_back(std::move(c));
      }
    }
    report.failures.push_back(std::move(level));
  }
  return report;
}

void print_deadlock_report(const StaticDeadlockReport& r, const FabricSpec& spec,
                           std::ostream& out) {
  const Topology& t = spec.topology;
  constexpr size_t kCasesShown = 20;
  std::vector<int> lossless;
  for (int p = 0; p < kDependencyPriorities; ++p) {
    if (r.lossless[p]) lossless.push_back(p);
  }
  int switches = 0;
  for (const TopologyNode& n : t.nodes) switches += n.kind == NodeKind::Switch;
  out << "scenario        " << spec.scenario_file << "\n"
      << "fabric          " << t.kind << ": " << switches << " switches, " << t.hosts << " hosts, "
      << r.switch_links.size() << " switch-to-switch links\n"
      << "lossless        " << (lossless.empty() ? "none (PFC off)" : "priority " + join(lossless))
      << "\n"
      << "hosts send on   "
      << (r.injected.empty() ? "any priority" : "priority " + join(r.injected) + " (the traffic's)")
      << "\n"
      << "dependencies    " << r.whole.edges << " edges between " << r.whole.groups_with_edges
      << " lossless ingress groups (every route, every destination)\n"
      << "cycles          " << (r.whole.cycles_found ? count_text(r.whole) : "none") << "\n";
  for (size_t i = 0; i < r.whole.cycles.size(); ++i) {
    print_cycle(r.whole.cycles[i], i, r.whole.cycles.size(), t, r.traffic, "", out);
  }
  if (r.whole.cycles.size() < r.whole.cycles_found) {
    out << "(" << r.whole.cycles.size() << " cycles shown; --max-cycles shows more)\n";
  }
  auto print_case = [&](const FailureCase& c, const std::string& indent) {
    out << (c.analysis.cycles_found ? count_text(c.analysis) : "no") << " cycle"
        << (c.analysis.cycles_found == 1 ? "" : "s");
    if (!c.unroutable.empty()) out << "; " << c.unroutable;
    out << "\n";
    for (size_t k = 0; k < c.analysis.cycles.size(); ++k) {
      print_cycle(c.analysis.cycles[k], k, c.analysis.cycles.size(), t, r.traffic, indent, out);
    }
  };
  for (const FailureCase& c : r.scheduled) {
    out << "events at " << format_time(c.at) << ": "
        << (c.links.empty() ? "every link up" : links_name(t, c.links) + " down") << ": ";
    print_case(c, "  ");
  }
  for (const FailureLevel& level : r.failures) {
    out << (level.links_down == 1 ? "single" : "double") << " link failures: " << level.cases
        << " cases, " << level.cases_with_cycles << " create a cycle";
    if (level.unroutable_cases) {
      out << ", " << level.unroutable_cases << " leave some host without a route";
    }
    out << "\n";
    for (size_t i = 0; i < std::min(level.listed.size(), kCasesShown); ++i) {
      const FailureCase& c = level.listed[i];
      out << "  " << links_name(t, c.links) << " down: ";
      print_case(c, "    ");
    }
    if (level.listed.size() > kCasesShown) {
      out << "  ... " << level.listed.size() - kCasesShown << " more cases (see --json)\n";
    }
  }
  out << "result          "
      << (r.cycle_found() ? "cyclic buffer dependency: PFC can deadlock"
                          : "no cyclic buffer dependency: PFC cannot deadlock on these routes")
      << "\n";
}

namespace {
// A failure case or an events state: its links down, its analysis, and the pairs left unrouted.
nlohmann::json case_json(const FailureCase& c, const Topology& t,
                         std::span<const TrafficPath> traffic) {
  nlohmann::json links = nlohmann::json::array();
  for (const int l : c.links) {
    links.push_back({node_name(t, t.links[l].a), node_name(t, t.links[l].b)});
  }
  nlohmann::json j = analysis_json(c.analysis, t, traffic);
  j["links"] = std::move(links);
  if (!c.unroutable.empty()) j["unroutable"] = c.unroutable;
  return j;
}
}  // namespace

nlohmann::json deadlock_json(const StaticDeadlockReport& r, const FabricSpec& spec) {
  const Topology& t = spec.topology;
  std::vector<int> lossless;
  for (int p = 0; p < kDependencyPriorities; ++p) {
    if (r.lossless[p]) lossless.push_back(p);
  }
  nlohmann::json failures = nlohmann::json::array();
  for (const FailureLevel& level : r.failures) {
    nlohmann::json cases = nlohmann::json::array();
    for (const FailureCase& c : level.listed) {
      cases.push_back(case_json(c, t, r.traffic));
    }
    failures.push_back({{"links_down", level.links_down},
                        {"cases", level.cases},
                        {"cases_with_cycles", level.cases_with_cycles},
                        {"unroutable_cases", level.unroutable_cases},
                        {"listed", std::move(cases)}});
  }
  nlohmann::json j = analysis_json(r.whole, t, r.traffic);
  j["scenario"] = spec.scenario_file;
  j["cycle_found"] = r.cycle_found();
  j["lossless_priorities"] = lossless;
  j["injected_priorities"] = r.injected;
  j["switch_links"] = r.switch_links.size();
  nlohmann::json scheduled = nlohmann::json::array();
  for (const FailureCase& c : r.scheduled) {
    nlohmann::json e = case_json(c, t, r.traffic);
    e["at_ps"] = c.at.ps;
    scheduled.push_back(std::move(e));
  }
  j["events"] = std::move(scheduled);
  j["failures"] = std::move(failures);
  return j;
}

int command_deadlock(const std::vector<std::string>& args) {
  po::options_description opts("fabtwin deadlock SCENARIO");
  std::vector<std::string> sets;
  std::string json;
  DeadlockOptions options;
  opts.add_options()("help,h", "this help")("set", po::value(&sets)->composing(),
                                            "override a scenario value: path=value (repeatable)")(
      "failures", po::value(&options.failures),
      "also analyse every single (1) or single and double (2) switch-to-switch link failure")(
      "any-priority", po::bool_switch(&options.any_priority),
      "assume hosts may send on any priority, not only those of the scenario's traffic")(
      "max-cycles", po::value(&options.max_cycles),
      "cycles described in full for the whole fabric (default 10)")(
      "json", po::value(&json), "write the analysis as JSON to FILE, or to stdout with -")(
      "scenario", po::value<std::string>(), "scenario file");
  po::variables_map vm;
  if (const std::optional<int> status = parse_scenario_command(args, opts, vm)) return *status;
  if (options.failures < 0 || options.failures > 2) throw po::error("--failures must be 0, 1 or 2");
  const FabricSpec spec =
      FabricSpec::resolve(load_scenario(vm["scenario"].as<std::string>(), sets));
  if (!json.empty() && json != "-") check_writable(json, "--json");
  const StaticDeadlockReport report =
      analyse_deadlocks(spec, policy_routes(spec.topology, spec.routing), options);
  if (json == "-") {
    std::cout << json_document(deadlock_json(report, spec));
  } else {
    print_deadlock_report(report, spec, std::cout);
    if (!json.empty()) {
      write_text_atomically(json, json_document(deadlock_json(report, spec)));
      std::cout << "json            " << json << "\n";
    }
  }
  return report.cycle_found() ? 1 : 0;
}

}  // namespace fabtwin
