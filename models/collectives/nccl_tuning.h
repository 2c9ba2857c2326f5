// NCCL's internal cost model for picking an algorithm, a protocol and a channel count, as in
// NCCL 2.30.7 src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) and the channel
// count of enqueue.cc (topoGetAlgoInfo); docs/references.md sections 3.3 and 3.4.
//
// This is NCCL's *prediction*, not a simulation: per (collective, algorithm, protocol) a fixed
// latency and a bus bandwidth derived from the topology search (bwIntra/bwInter per channel,
// channel count, GPU generation, CPU vendor), and time = latency + bytes / algBw. NCCL uses it
// to choose; fabtwin uses it to choose the same way and to report where NCCL would switch from
// tree to ring.
//
// Only the Tree and Ring algorithms are modelled (no CollNet, NVLS, NVLSTree or PAT). Units:
// latencies in microseconds, bandwidths in GB/s (1e9 bytes/s), sizes in bytes.
#pragma once

#include <cstdint>

namespace fabtwin::nccl {

inline constexpr const char* kTuningVersion = "2.30.7";

enum class Algorithm { Tree, Ring };
enum class Protocol { LL, LL128, Simple };
enum class Collective { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce };

const char* name(Algorithm);   // "tree", "ring"
const char* name(Protocol);    // "LL", "LL128", "Simple"
const char* name(Collective);  // "allreduce", "allgather", ...

struct TuningInput {
  Collective op = Collective::AllReduce;
  int64_t bytes = 0;               // nBytes NCCL passes to the model (per-rank buffer size for AR)
  int ranks = 1;                   // nRanks
  int nodes = 1;                   // nNodes
  int channels = 1;                // comm channels (graph nChannels)
  double bw_intra = 0;             // graph.bwIntra, GB/s per channel
  double bw_inter = 0;             // graph.bwInter, GB/s per channel
  int compute_capability = 90;     // 70 Volta, 80 Ampere, 90 Hopper, 100 Blackwell
  bool intel_cpu = true;           // llMaxBws row / netOverhead for multi-node (false: AMD)
  double latency_inter_us = 0;     // graph.latencyInter from the net plugin
  bool nvlink_intra = true;        // intra-node hardware: NVLINK (true) or PCI
  bool same_channels = true;       // ring graph.sameChannels (Ring Broadcast/Reduce latency only)
  bool tree_pattern_tree = false;  // tree graph searched with NCCL_TOPO_PATTERN_TREE: bw x0.85
};

struct Estimate {
  bool enabled = false;   // false: NCCL would never pick it (bandwidth 0, time -1)
  double latency_us = 0;  // comm->latencies[coll][algo][proto], before the plateau factor
  double bandwidth = 0;   // comm->bandwidths: algBw in GB/s, before the tree correction
  double time_us = -1;    // ncclTopoGetAlgoTime for input.bytes, numPipeOps = 1
};

// lat/bw per (coll, algo, proto) and time for one collective of input.bytes (numPipeOps = 1).
// Tree is enabled for AllReduce only; LL128 only where NCCL enables it by default (NVLink inside
// the node and a compute capability NCCL has validated it on); nothing is enabled for ranks < 2.
Estimate estimate(const TuningInput&, Algorithm, Protocol);

// The fastest enabled algorithm for `protocol` (tree is enabled for all-reduce only). Ties go to
// tree, as NCCL scans tree first and keeps the first strict minimum. Ring if neither is enabled.
Algorithm choose_algorithm(const TuningInput&, Protocol protocol = Protocol::Simple);

// Channels NCCL actually uses for a collective of `bytes`: start from comm channels and decrement
// while bytes < nc * nthreads * threadThreshold and nc > 1. threadThreshold: Simple 64, LL 8
// (x ranks for ring), LL128 8; nthreads: Simple 512, LL 512, LL128 640.
int channels_for(int64_t bytes, int comm_channels, Algorithm, Protocol, int ranks);

// The smallest power of two in [8 B, 64 GiB] from which `a` beats `b` (a enabled, and strictly
// faster or b disabled) at every power of two up to 64 GiB; -1 if `a` does not beat `b` at 64 GiB.
// input.bytes is ignored. Used to report the model's ring/tree crossover.
int64_t crossover_bytes(TuningInput input, Algorithm a, Algorithm b, Protocol protocol);

}  // namespace fabtwin::nccl
