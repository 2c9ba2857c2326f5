// `fabtwin deadlock`: the static buffer-dependency analysis of a scenario (docs/deadlock.md),
// with the fabric whole and under every single or double switch-to-switch link failure.
#pragma once

#include <array>
#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/fabric/buffer_dependency.h"
#include "models/fabric/fabric_spec.h"

namespace fabtwin {

// The routes of the scenario's fabric with some links down (`link_up` indexed like
// `topology.links`); pairs left without a route are listed by RoutingTable::unreachable().
using RouteFunction = std::function<RoutingTable(const std::vector<bool>& link_up)>;

// The scenario's routing policy (shortest_path, up_down or static, with its rewrites) over the
// links that work. `topology` and `policy` must outlive the function.
RouteFunction policy_routes(const Topology& topology, const RoutingPolicy& policy);

struct DeadlockOptions {
  int failures = 0;             // links down at a time: 0, 1 or 2 (2 also runs every single one)
  bool any_priority = false;    // hosts may send on any priority, not only the traffic's
  size_t max_cycles = 10;       // cycles described in full, fabric whole
  size_t count_limit = 10000;   // cycles counted at most, fabric whole
  size_t failure_cycles = 1;    // cycles described in full per failure case
  size_t failure_limit = 1000;  // cycles counted at most per failure case
};

// A cycle with what creates it: edge i goes from groups[i] out of port out_ports[i] to
// groups[i + 1] (the last to the first).
struct CycleReport {
  std::vector<IngressGroup> groups;
  std::vector<int> out_ports;
  std::vector<EdgeLabel> labels;
};

// The analysis of one set of routes.
struct DependencyAnalysis {
  int groups_with_edges = 0;
  int edges = 0;
  size_t cycles_found = 0;
  bool capped = false;
  std::vector<CycleReport> cycles;
};

struct FailureCase {
  Time at{};               // the scenario's events: from when these links are down (else 0)
  std::vector<int> links;  // failed links, indices into topology.links, ascending
  std::string unroutable;  // set when some host pairs are left without a route (still analysed)
  DependencyAnalysis analysis;
};

// Every case of one failure level (1 or 2 links down).
struct FailureLevel {
  int links_down = 0;
  size_t cases = 0;
  size_t cases_with_cycles = 0;
  size_t unroutable_cases = 0;
  std::vector<FailureCase> listed;  // cases with a cycle or without some route, in case order
};

struct StaticDeadlockReport {
  std::array<bool, kDependencyPriorities> lossless{};
  std::vector<int> switch_links;  // indices into topology.links
  std::vector<TrafficPath> traffic;
  std::vector<int> injected;  // priorities hosts send on; empty: any that reaches a lossless one
  DependencyAnalysis whole;
  // The links the scenario's `events` leave down, after each instant at which some link changes
  // (the routes the switches converge to then).
  std::vector<FailureCase> scheduled;
  std::vector<FailureLevel> failures;

  bool cycle_found() const;
};

StaticDeadlockReport analyse_deadlocks(const FabricSpec& spec, const RouteFunction& routes,
                                       const DeadlockOptions& options);
void print_deadlock_report(const StaticDeadlockReport& report, const FabricSpec& spec,
                           std::ostream& out);
nlohmann::json deadlock_json(const StaticDeadlockReport& report, const FabricSpec& spec);

// The command: exit status 0 no cycle, 1 a cycle (whole or under some failure), 2 bad input.
int command_deadlock(const std::vector<std::string>& args);

}  // namespace fabtwin
