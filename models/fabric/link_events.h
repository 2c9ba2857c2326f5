// Link failures and recoveries (the scenario's `events` section) and what they do to routing:
// for every instant at which some link changes, the routing policy recomputes every switch's
// table over the links then working, and each switch whose table changed installs it a
// convergence delay later. All of it is computed once, before the run, from the scenario
// alone, so every thread count and MPI rank count sees the same updates at the same times.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "models/fabric/topology.h"
#include "models/net/routing.h"

namespace fabtwin {

// One link going down or up (a switch event is one of these per link of the switch).
struct LinkEvent {
  Time at;
  int link = 0;  // index into topology.links
  bool up = false;

  bool operator==(const LinkEvent&) const = default;
};

// A switch installs `table` at `at`.
struct RouteUpdate {
  Time at;
  int node = 0;
  ForwardingTable table;

  bool operator==(const RouteUpdate&) const = default;
};

// The host pairs with no route from `from` on (until the next epoch): at time 0 the initial
// routes, then one epoch per instant of link events, starting when the new routes are in.
struct RouteEpoch {
  Time from;
  std::vector<std::pair<int, int>> unreachable;  // (source host, destination host)

  bool operator==(const RouteEpoch&) const = default;
};

struct LinkSchedule {
  std::vector<LinkEvent> events;     // by time, then as listed
  std::vector<RouteUpdate> updates;  // by time, then node
  std::vector<RouteEpoch> epochs;    // the first at time 0
  int longest_route = 0;             // switches on the longest route of any epoch
};

// Reads `events` (null: none) naming links and switches of `topology`; throws ScenarioError.
std::vector<LinkEvent> read_link_events(const nlohmann::json& events, const Topology& topology);

// The route updates and unreachable pairs that `events` cause under `policy`; `initial` is the
// policy's table set with every link up.
LinkSchedule plan_link_schedule(const Topology& topology, const RoutingPolicy& policy,
                                const RoutingTable& initial, std::vector<LinkEvent> events);

extern const ParamGroup kLinkEventParams;  // events[]

}  // namespace fabtwin
