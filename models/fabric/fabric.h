// A whole simulated fabric built from a scenario: topology, routing, switches, NICs and
// traffic on one simulator. Building it checks the scenario completely, so a mistake is
// reported before anything runs or is written.
#pragma once

#include <memory>
#include <vector>

#include "models/collectives/collective.h"
#include "models/collectives/gpu_node.h"
#include "models/nic/host_nic.h"
#include "models/fabric/partitioning.h"
#include "models/net/routing.h"
#include "models/fabric/run_result.h"
#include "models/net/switch.h"
#include "models/fabric/topology.h"
#include "sim/scenario_file.h"
#include "sim/simulator.h"

namespace fabtwin {

struct RunConfig {
  Time end;
  uint64_t seed;
  int threads;  // 0: every hardware thread
};

class Fabric {
 public:
  // `threads` > 0 overrides run.threads. With a transport of several ranks (mpirun), each rank
  // runs its share of the partitions (one per rank) and rank 0's run() returns the whole result.
  explicit Fabric(const ScenarioDocument& scenario, int threads = 0,
                  Transport* transport = nullptr);
  ~Fabric();

  RunResult run(const Simulator::Progress& progress = {});

  const Topology& topology() const { return topology_; }
  const std::vector<FlowSpec>& flows() const { return flows_; }
  const RunConfig& run_config() const { return run_; }
  const FabricPartitioning& partitioning() const { return partitioning_; }
  const CollectiveSetup& collectives() const { return *collectives_; }

  static RunConfig read_run_config(const nlohmann::json& scenario);

 private:
  std::string scenario_text_;
  std::string scenario_file_;
  RunConfig run_;
  Topology topology_;
  std::unique_ptr<RoutingTable> routing_;
  FabricPartitioning partitioning_;
  std::vector<PacketPool> pools_;  // one per partition
  Transport* transport_ = nullptr;
  std::unique_ptr<EventCodec> codec_;
  std::unique_ptr<Simulator> sim_;
  std::vector<HostNic*> nics_;
  std::vector<Switch*> switches_;
  std::vector<FlowSpec> flows_;
  std::string congestion_control_;
  std::unique_ptr<CollectiveSetup> collectives_;
  std::vector<GpuNode*> gpu_nodes_;

  void build_collectives();
  void collect_collectives(RunResult& r, const GpuNodeRecords& records) const;
};

// Every parameter group fabtwin declares, in the order `fabtwin describe` prints them.
std::vector<const ParamGroup*> all_param_groups();

}  // namespace fabtwin
