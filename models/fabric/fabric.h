// A whole simulated fabric instantiated from a resolved scenario (FabricSpec): switches, NICs
// and GPU nodes on one simulator, partitioned over threads or MPI ranks, and the run that
// gathers their records into a RunResult.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "models/collectives/gpu_node.h"
#include "models/fabric/fabric_spec.h"
#include "models/fabric/partitioning.h"
#include "models/fabric/run_result.h"
#include "models/net/switch.h"
#include "models/nic/host_nic.h"
#include "sim/simulator.h"

namespace fabtwin {

class Fabric {
 public:
  // `threads` > 0 overrides run.threads. With a transport of several ranks (mpirun), each rank
  // runs its share of the partitions (one per rank) and rank 0's run() returns the whole result.
  explicit Fabric(FabricSpec spec, int threads = 0, Transport* transport = nullptr);
  // Resolves `scenario` first (FabricSpec::resolve).
  explicit Fabric(const ScenarioDocument& scenario, int threads = 0,
                  Transport* transport = nullptr);
  ~Fabric();

  RunResult run(const Simulator::Progress& progress = {});

  const FabricSpec& spec() const { return spec_; }
  const Topology& topology() const { return spec_.topology; }
  const std::vector<FlowSpec>& flows() const { return spec_.flows; }
  const RunConfig& run_config() const { return run_; }
  const FabricPartitioning& partitioning() const { return partitioning_; }
  const CollectiveSetup& collectives() const { return spec_.collectives; }

 private:
  FabricSpec spec_;  // the collectives' connections gain their NIC queue pairs here
  RunConfig run_;    // the spec's, with the thread count resolved
  FabricPartitioning partitioning_;
  std::deque<PacketPool> pools_;  // one per partition (one in all on one thread), then lanes
  Transport* transport_ = nullptr;
  std::unique_ptr<EventCodec> codec_;
  std::unique_ptr<Simulator> sim_;
  std::vector<HostNic*> nics_;
  std::vector<Switch*> switches_;
  std::vector<GpuNode*> gpu_nodes_;
  std::unique_ptr<DeadlockDetector> detector_;  // null when off

  void add_connection_qps();
  void collect_collectives(RunResult& r, const GpuNodeRecords& records) const;
};

}  // namespace fabtwin
