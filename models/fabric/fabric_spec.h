// The resolved scenario: every section read and checked once, combined into what a run uses,
// as plain data. Nothing here builds a component: `Fabric` instantiates a spec, and every
// command that needs a scenario's meaning without running it (validation references,
// describe, bench, analyses) reads the spec instead of the JSON.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "models/collectives/collective.h"
#include "models/fabric/deadlock_detector.h"
#include "models/fabric/link_events.h"
#include "models/fabric/partitioning.h"
#include "models/fabric/topology.h"
#include "models/net/routing.h"
#include "models/net/switch_config.h"
#include "models/nic/host_nic.h"
#include "models/traffic/flow.h"
#include "sim/scenario_file.h"

namespace fabtwin {

struct RunConfig {
  Time end;
  uint64_t seed;
  int threads;              // 0: every hardware thread
  int partitions;           // run.partitions: at least this many; 0: as the fabric's size asks
  bool stop_on_deadlock;    // run.on_deadlock: "stop" (true) or "continue"
  Partitioner partitioner;  // run.partitioner: how the fabric is cut over threads or ranks
  bool bursts;              // run.bursts: each component's events of a window run together

  bool operator==(const RunConfig&) const = default;
};

struct OutputConfig {
  std::string hdf5;  // empty: no result file named by the scenario
  Time rate_sample_interval;
  Time queue_sample_interval;
  bool collective_timeline;

  bool operator==(const OutputConfig&) const = default;
};

struct FabricSpec {
  std::string scenario_text;  // the merged document, as stored in result files
  std::string scenario_file;
  RunConfig run;
  OutputConfig output;
  // The wiring with tiers and each port's peer, the routing policy, and every switch's
  // forwarding entries with every link up.
  Topology topology;
  RoutingPolicy routing;
  RoutingTable routes;
  // Link failures and recoveries (`events`), the tables switches install after them (each at
  // its time, per switch), and the host pairs left without a route in each epoch.
  std::vector<LinkEvent> events;
  std::vector<RouteUpdate> route_updates;
  std::vector<RouteEpoch> route_epochs;
  // A frame's TTL can run out (static routes may loop, or routing.ttl is no longer than the
  // longest route of any epoch): every switch then counts and checks it. Otherwise the TTL
  // cannot run out and switches skip it.
  bool ttl_can_expire = false;
  // Switches: shared buffer, PFC, ECN marking and QoS (DSCP map, lossless priorities).
  SwitchConfig switches;
  // NICs: queue pairs, receive buffer, congestion control, and the fabric's QoS they follow.
  NicConfig nic;
  // fabric.deadlock: the runtime deadlock detector.
  DeadlockConfig deadlock;
  std::string congestion_control;  // for the summary: "none" or "dcqcn (paper profile)"
  // Traffic: plain flows (each with the generator that made it) and collectives, with their
  // resolved plans and connections (the NIC queue pairs are added when a Fabric is built).
  std::vector<FlowSpec> flows;
  CollectiveSetup collectives;
  // Settings that will make the run costly, each a sentence with the expected cost (run_cost.h).
  std::vector<std::string> warnings;

  // Reads and checks every section of `doc`. Throws ScenarioError naming the JSON path.
  static FabricSpec resolve(const ScenarioDocument& doc);

  // Member by member (sweeps compare resolved scenarios: fabric_spec.h, same_resolution).
  bool operator==(const FabricSpec&) const = default;
};

// Whether two resolved scenarios are the same in everything a run uses: every member compared
// (defaulted comparisons, so a member added later is compared too), the scenario's text and
// file name aside. Sweeps use it to find axes some other setting shadows.
bool same_resolution(FabricSpec a, FabricSpec b);

// Every parameter group fabtwin declares, in the order `fabtwin describe` prints them.
std::vector<const ParamGroup*> all_param_groups();

}  // namespace fabtwin
