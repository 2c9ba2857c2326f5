// A switch driven alone: three scripted hosts around it, a star of 100 Gb/s links of 1 us.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/fabric/topology.h"
#include "models/net/routing.h"
#include "models/net/switch.h"
#include "sim/simulator.h"

namespace fabtwin::testing {

// `Host` is the test's scripted end of a link: a NetworkNode built from (name, pool).
template <class Host>
struct StarBench {
  PacketPool pool;
  Topology topology = build_star(3, parse_rate("100Gbps"), parse_time("1us"));
  RoutingTable routing{topology};
  Simulator sim{1};
  std::vector<Host*> hosts;
  Switch* sw = nullptr;

  // `table`: the switch's forwarding table when not the star's shortest paths (e.g. with a
  // priority rewrite).
  explicit StarBench(const SwitchConfig& config, const ForwardingTable* table = nullptr) {
    for (int h = 0; h < 3; ++h) {
      auto host = std::make_unique<Host>("host" + std::to_string(h), pool);
      hosts.push_back(host.get());
      sim.add(std::move(host));
    }
    auto s = std::make_unique<Switch>("switch", pool, table ? *table : routing.table(3), 3, config);
    sw = s.get();
    sim.add(std::move(s));
    for (Host* h : hosts) h->ports().resize(1);
    sw->ports().resize(3);
    for (const Link& l : topology.links) {
      wire(l, static_cast<NetworkNode&>(sim.component(l.a)).ports()[l.a_port],
           static_cast<NetworkNode&>(sim.component(l.b)).ports()[l.b_port]);
    }
    sw->begin();
  }
};

}  // namespace fabtwin::testing
