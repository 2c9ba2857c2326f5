// NCCL collectives in a scenario: the `collective` traffic generator (an nccl-tests-like run:
// op, size sweep, ranks, algorithm, iterations), the GPU node hardware (`gpu`) and NCCL's own
// knobs (`nccl`), and the set-up shared by every GPU node during a run: each size's resolved
// algorithm and channels, and the connections between ranks with their NIC queue pairs.
#pragma once

#include <array>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "models/collectives/collective_result.h"
#include "models/collectives/nccl_plan.h"
#include "models/fabric/topology.h"
#include "sim/params.h"

namespace fabtwin {

// GPU node hardware (the `gpu` section); every field is set from its declared parameter.
struct GpuConfig {
  BitsPerSec nvlink_rate;  // per GPU, each direction
  BitsPerSec pcie_rate;    // GPU/NIC PCIe link, each direction, after protocol overhead
  Time pcie_latency;
  bool gpudirect;
  Time bounce_latency;  // GPUDirect off: staging through host memory, per message
  double channel_rate;  // bytes/s one channel's thread block reduces or copies
  int compute_capability;
  bool intel_cpu;
  // The PCIe rate a NIC sees: halved without GPUDirect (every byte crosses PCIe twice).
  BitsPerSec nic_dma_rate() const { return {gpudirect ? pcie_rate.bps : pcie_rate.bps / 2}; }

  bool operator==(const GpuConfig&) const = default;
};

// NCCL's knobs (the `nccl` section); every field is set from its declared parameter.
struct NcclConfig {
  Time base_latency;         // per collective launch
  Time nvlink_step_latency;  // a slice written over NVLink until the peer acts on it
  Time net_step_latency;     // proxy overhead of a network send
  // The same per algorithm, indexed by nccl::Algorithm (tree, ring): the generic ones above
  // unless the scenario sets them (nccl.tree_net_step_latency, ...).
  std::array<Time, 2> nvlink_step_latency_of;
  std::array<Time, 2> net_step_latency_of;
  int64_t buffsize;
  int min_channels;
  int max_channels;
  int channels;  // communicator channels ("auto": 2 per NIC of a node)
  int qps_per_connection;
  bool split_data_on_qps;  // each message split over the connection's QPs (else alternating)
  bool adaptive_routing;   // NCCL_IB_ADAPTIVE_ROUTING: data as WRITEs, then a WRITE with imm
  int64_t ar_threshold;    // messages above this many bytes go that way
  int64_t p2p_net_chunk;
  int64_t p2p_nvlink_chunk;

  bool operator==(const NcclConfig&) const = default;
};

// One `collective` traffic generator.
struct CollectiveSpec {
  uint32_t generator = 0;  // index in `traffic`
  nccl::Op op = nccl::Op::AllReduce;
  std::string algorithm = "auto";  // auto, ring, tree
  std::vector<int64_t> sizes;      // nccl-tests "size" of each row
  std::string type = "float";
  int type_bytes = 4;
  std::string redop = "sum";
  int root = 0;
  std::vector<int> gpus;  // rank -> GPU index
  int iterations = 1;
  int warmup = 0;
  Time start{};
  int dscp = 26;

  bool operator==(const CollectiveSpec&) const = default;
};

// One size of one generator, resolved: what NCCL would run.
struct CollectiveOp {
  uint32_t spec = 0;  // index into CollectiveSetup::specs
  int64_t size = 0;
  nccl::PlanInput plan;  // algorithm and channels resolved
  // Its step latencies: its algorithm's for a ring or tree collective, the generic ones for
  // all-to-all and send/receive, which NCCL runs as point-to-point transfers outside its
  // algorithms.
  Time nvlink_step_latency{};
  Time net_step_latency{};

  bool operator==(const CollectiveOp&) const = default;
};

// A one-way connection between two ranks of one generator on one channel.
struct CollectiveConnection {
  uint32_t spec = 0;
  int src_rank = 0, dst_rank = 0, channel = 0;
  CollectiveTransport transport = CollectiveTransport::NvLink;
  int src_host = -1, dst_host = -1;  // NICs (Net)
  std::vector<uint32_t> send_qps;    // at the source NIC, one per QP of the connection
  Time credit_latency{};             // a freed buffer slot reaching the sender

  bool operator==(const CollectiveConnection&) const = default;
};

struct CollectiveSetup {
  GpuConfig gpu;
  NcclConfig nccl;
  std::vector<CollectiveSpec> specs;
  std::vector<CollectiveOp> ops;                // specs' sizes in order: one nccl-tests row each
  std::vector<std::vector<uint32_t>> spec_ops;  // [spec] -> indices into ops
  std::vector<CollectiveConnection> connections;
  std::map<std::tuple<uint32_t, int, int, int>, uint32_t> connection_index;  // spec,src,dst,ch
  std::vector<std::vector<int>> spec_nodes;  // [spec] -> GPU nodes with ranks, ascending
  std::vector<Time> barrier_latency;         // [spec]: between sizes, like nccl-tests' barrier
  bool record_timeline = true;               // output.collective_timeline

  bool empty() const { return specs.empty(); }
  uint32_t connection(uint32_t spec, int src, int dst, int channel) const {
    return connection_index.at({spec, src, dst, channel});
  }

  bool operator==(const CollectiveSetup&) const = default;
};

// Reads the `collective` generators (other generators are left to generate_traffic), `gpu`
// and `nccl`, and resolves each size's algorithm and channels. Connections are added by
// add_connections once the NICs exist.
CollectiveSetup read_collectives(const nlohmann::json& scenario, const Topology& topology);

// What NCCL's tuning model is told about collective `spec` (sizes aside): ranks, nodes,
// channels and per-channel bandwidths derived from the NICs and NVLink.
nccl::TuningInput tuning_input(const CollectiveSetup& setup, const Topology& topology,
                               uint32_t spec);

// Parameter groups: gpu, nccl and traffic[type=collective].
const std::vector<const ParamGroup*>& collective_param_groups();
extern const ParamGroup kCollectiveParams;

}  // namespace fabtwin
