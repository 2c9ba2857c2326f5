#include "models/fabric/link_events.h"

#include <algorithm>

namespace fabtwin {

const ParamGroup kLinkEventParams{
    "events[]",
    "events",
    "Link failures and recoveries",
    {
        {"at", ParamType::Time, "", "simulated time of the change", "fabtwin"},
        {"link", ParamType::List, "(none)",
         "the two end nodes of the link, by name: [\"leaf0\", \"spine0\"] (every link between "
         "them when there are several); give link or switch",
         "fabtwin"},
        {"switch", ParamType::Text, "(none)", "a switch whose links all change", "fabtwin"},
        {"state", ParamType::Choice, "",
         "down: the link stops carrying frames (frames on it or queued for it are lost, "
         "drops_link_down) and both ends clear its PFC state; up: it works again. Routes follow "
         "routing.convergence_delay later",
         "fabtwin", "down|up"},
    }};

std::vector<LinkEvent> read_link_events(const nlohmann::json& events, const Topology& t) {
  std::vector<LinkEvent> out;
  if (events.is_null()) return out;
  if (!events.is_array()) {
    throw ScenarioError("events", "expected a list of link events, found " + json_text(events));
  }
  for (size_t i = 0; i < events.size(); ++i) {
    ParamReader r(events[i], "events[" + std::to_string(i) + "]", kLinkEventParams);
    const Time at = r.time("at");
    if (at.ps < 0) {
      throw ScenarioError(r.path_of("at"),
                          "expected a time of 0 or later, found " + json_text(events[i]["at"]));
    }
    const bool up = r.choice("state") == "up";
    std::vector<int> links;
    if (r.has("link") == r.has("switch")) {
      throw ScenarioError(r.path(), "expected either \"link\" or \"switch\", found " +
                                        std::string(r.has("link") ? "both" : "neither"));
    }
    if (r.has("switch")) {
      const std::string name = r.text("switch");
      const int v = t.node_named(name);
      if (v < 0 || t.nodes[v].kind != NodeKind::Switch) {
        throw ScenarioError(r.path_of("switch"),
                            "expected the name of a switch, found \"" + name + "\"");
      }
      for (size_t l = 0; l < t.links.size(); ++l) {
        if (t.links[l].a == v || t.links[l].b == v) links.push_back(static_cast<int>(l));
      }
    } else {
      const nlohmann::json& link = r.raw("link");
      if (!link.is_array() || link.size() != 2 || !link[0].is_string() || !link[1].is_string()) {
        throw ScenarioError(
            r.path_of("link"),
            "expected the names of the link's two ends, [\"a\", \"b\"], found " + json_text(link));
      }
      int ends[2];
      for (int k = 0; k < 2; ++k) {
        ends[k] = t.node_named(link[k].get<std::string>());
        if (ends[k] < 0) {
          throw ScenarioError(r.path_of("link") + "[" + std::to_string(k) + "]",
                              "expected the name of a node, found " + json_text(link[k]));
        }
      }
      for (size_t l = 0; l < t.links.size(); ++l) {
        const Link& k = t.links[l];
        if ((k.a == ends[0] && k.b == ends[1]) || (k.a == ends[1] && k.b == ends[0])) {
          links.push_back(static_cast<int>(l));
        }
      }
      if (links.empty()) {
        throw ScenarioError(r.path_of("link"), "expected two nodes joined by a link, found " +
                                                   json_text(link) + " (not neighbours)");
      }
    }
    r.finish();
    for (int l : links) out.push_back({at, l, up});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const LinkEvent& a, const LinkEvent& b) { return a.at < b.at; });
  return out;
}

LinkSchedule plan_link_schedule(const Topology& topology, const RoutingPolicy& policy,
                                const RoutingTable& initial, std::vector<LinkEvent> events) {
  LinkSchedule s;
  s.events = std::move(events);
  s.epochs.push_back({Time{}, initial.unreachable()});
  auto longest = [&](const RoutingTable& routes) {
    s.longest_route = std::max(s.longest_route, routes.longest_distance() - 1);
  };
  longest(initial);
  std::vector<bool> link_up(topology.links.size(), true);
  std::vector<const ForwardingTable*> current(topology.nodes.size());
  for (size_t v = 0; v < topology.nodes.size(); ++v)
    current[v] = &initial.table(static_cast<int>(v));
  std::vector<RoutingTable> computed;  // keeps the tables `current` points into
  computed.reserve(s.events.size());
  for (size_t i = 0; i < s.events.size();) {
    const Time at = s.events[i].at;
    for (; i < s.events.size() && s.events[i].at == at; ++i) {
      link_up[s.events[i].link] = s.events[i].up;
    }
    computed.push_back(compute_routes(topology, policy, link_up));
    const RoutingTable& routes = computed.back();
    longest(routes);
    const Time install = at + policy.convergence_delay;
    for (int v = topology.hosts; v < static_cast<int>(topology.nodes.size()); ++v) {
      if (routes.table(v) == *current[v]) continue;
      s.updates.push_back({install, v, routes.table(v)});
      current[v] = &routes.table(v);
    }
    s.epochs.push_back({install, routes.unreachable()});
  }
  return s;
}

}  // namespace fabtwin
