// NCCL's tuning model (tree and ring only); see nccl_tuning.h. The tables below carry NCCL's
// numbers; the code around them is written from docs/references.md sections 3.3-3.4.
#include "models/collectives/nccl_tuning.h"

#include <algorithm>

namespace fabtwin::nccl {
namespace {

constexpr int kTree = 0, kRing = 1;
constexpr int kNvlink = 0, kPci = 1, kNet = 2;

int index(Algorithm a) {
  return a == Algorithm::Tree ? kTree : kRing;
}
int index(Protocol p) {
  return static_cast<int>(p);
}  // LL 0, LL128 1, Simple 2

// Base latency of an operation in us, [algorithm][LL, LL128, Simple].
// Source: NCCL 2.30.7 src/graph/tuning.cc (baseLat).
constexpr double kBaseLat[2][3] = {
    {6.8, 14.0, 8.4},  // Tree
    {6.6, 14.0, 8.4},  // Ring
};

// Latency of one step over a given kind of hardware in us, [hw][algorithm][LL, LL128, Simple].
// Source: NCCL 2.30.7 src/graph/tuning.cc (hwLat).
constexpr double kHwLat[3][2][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}},   // NVLINK: Tree, Ring
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}},    // PCI: Tree, Ring
    {{5.0, 8.5, 14.0}, {2.7, 4.0, 14.0}},  // NET: Tree, Ring
};

// Bandwidth caps in GB/s. Rows: Volta, Ampere, Hopper, Blackwell (compute capability index);
// columns: 1 node, 2 nodes, 3 or more nodes.
// Source: NCCL 2.30.7 src/graph/tuning.cc (llMaxBws). Total LL bandwidth cap (not per channel).
// On one node the row is the GPU generation; on several nodes it is the CPU vendor instead:
// row 0 for Intel (39.0 at 2 nodes, 20.4 beyond), row 1 for AMD or mixed (22.5, 19.0).
constexpr double kLlMaxBws[4][3] = {{39.0, 39.0, 20.4},    // Volta-N1 / Intel-N2 / Intel-N4
                                    {87.7, 22.5, 19.0},    // Ampere-N1 / AMD-N2 / AMD-N4
                                    {141.0, 45.0, 35.0},   // Hopper-N1
                                    {282.0, 90.0, 70.0}};  // Blackwell-N1
// Source: NCCL 2.30.7 src/graph/tuning.cc (perChMaxRingLL128Bws). Per channel.
constexpr double kPerChMaxRingLl128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
// Source: NCCL 2.30.7 src/graph/tuning.cc (perChMaxTreeLL128Bws). Per channel.
constexpr double kPerChMaxTreeLl128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
// Source: NCCL 2.30.7 src/graph/tuning.cc (perChMaxTreeBws). Per channel.
constexpr double kPerChMaxTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};

// Tree AllReduce bandwidth derating, [LL, LL128, Simple][log2(nBytes / 64)]: one entry per power
// of two from 64 B; sizes outside the table get no correction (as NCCL: the index must be
// in range). Source: NCCL 2.30.7 src/graph/tuning.cc (treeCorrectionFactor).
constexpr int kTreeCorrectionSizes = 24;
constexpr double kTreeCorrection[3][kTreeCorrectionSizes] = {
    {1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1},
    {1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// Per-rank step overhead of posting to the network, us (x3 for Simple). Source: NCCL 2.30.7
// src/graph/tuning.cc (getNetOverhead): 1.0 on Intel x86, 2.0 on AMD x86.
constexpr double kNetOverheadIntel = 1.0, kNetOverheadAmd = 2.0;

// Per-thread work before adding a channel, bytes. Source: NCCL 2.30.7 src/include/device.h
// (NCCL_LL_THREAD_THRESHOLD, NCCL_LL128_THREAD_THRESHOLD, NCCL_SIMPLE_THREAD_THRESHOLD); the LL
// one is multiplied by nRanks for ring in src/graph/tuning.cc.
constexpr int64_t kThreadThreshold[3] = {8, 8, 64};
// Default maximum threads per channel. Source: NCCL 2.30.7 src/include/device.h
// (NCCL_LL_MAX_NTHREADS, NCCL_LL128_MAX_NTHREADS, NCCL_SIMPLE_MAX_NTHREADS).
constexpr int64_t kMaxThreads[3] = {512, 640, 512};

int floor_log2(int64_t v) {
  int l = -1;
  while (v > 0) {
    v >>= 1;
    ++l;
  }
  return l;  // -1 for v <= 0, like NCCL's log2i(0)
}

int compcap_index(int cc) {
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

// NCCL enables LL128 by default only on NVLink inside the node and on GPU generations it was
// validated on (src/graph/tuning.cc); the network path (NIC close to the GPU) is assumed fine.
bool ll128_enabled(const TuningInput& in) {
  if (!in.nvlink_intra) return false;
  switch (in.compute_capability) {
    case 70:
    case 80:
    case 90:
    case 100:
    case 120:
      return true;
    default:
      return false;
  }
}

int steps(Collective op, int ranks) {
  switch (op) {
    case Collective::AllReduce:
      return 2 * (ranks - 1);
    case Collective::AllGather:
    case Collective::ReduceScatter:
      return ranks - 1;
    default:
      return ranks;
  }
}

// comm->bandwidths[coll][a][p] and comm->latencies[coll][a][p] for an enabled pair.
void tune(const TuningInput& in, int a, int p, double& bus_to_alg_bw, double& lat) {
  const int nodes = in.nodes, ranks = in.ranks;
  const int cc = compcap_index(in.compute_capability);
  const int col = nodes <= 2 ? nodes - 1 : 2;
  const int ll_row = nodes == 1 ? cc : (in.intel_cpu ? 0 : 1);
  const double ll_max_bw = kLlMaxBws[ll_row][col];
  const int nch = in.channels;
  const bool all_reduce = in.op == Collective::AllReduce;

  // Bandwidth: start from the per-channel speed of the graph, times the channels.
  const double bw = nodes <= 2 ? in.bw_intra : in.bw_inter;
  double bus_bw = nch * bw;
  if (a == kRing && p == index(Protocol::LL)) bus_bw = std::min(ll_max_bw, bus_bw * 0.5);
  if (a == kRing && p == index(Protocol::LL128))
    bus_bw = std::min(bus_bw * 0.92, nch * kPerChMaxRingLl128Bws[cc][col]);
  if (a == kTree && all_reduce) bus_bw = std::min(bus_bw * 0.92, nch * kPerChMaxTreeBws[cc][col]);
  if (a == kTree && p == index(Protocol::LL)) bus_bw = std::min(bus_bw / 3.8, ll_max_bw);
  if (a == kTree && p == index(Protocol::LL128))
    bus_bw = std::min(bus_bw * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                      nch * kPerChMaxTreeLl128Bws[cc][col]);
  if (a == kTree && in.tree_pattern_tree) bus_bw *= 0.85;
  const int nsteps = steps(in.op, ranks);
  // Bus bandwidth to algorithm bandwidth: a ring moves nsteps/nRanks of the buffer per rank, a
  // tree (reduce up, then broadcast down) twice the buffer.
  bus_to_alg_bw = a == kRing ? bus_bw * ranks / nsteps : bus_bw * 0.5;

  // Latency.
  const int intra_hw = in.nvlink_intra ? kNvlink : kPci;
  const int hw = nodes == 1 ? intra_hw : kNet;
  double intra_lat = kHwLat[intra_hw][a][p];
  // With one rank per node nothing hides the network latency: use the tree's network latency.
  double inter_lat = ranks == nodes ? kHwLat[kNet][kTree][p] : kHwLat[kNet][a][p];
  inter_lat += in.latency_inter_us;
  if (p == index(Protocol::Simple)) inter_lat += in.latency_inter_us;  // flush
  lat = kBaseLat[a][p];
  if (a == kRing) {
    if (in.op == Collective::Broadcast || in.op == Collective::Reduce) {
      double step = kHwLat[hw][kRing][p];
      if (in.same_channels) {
        lat += step;
      } else {
        if (p == index(Protocol::Simple)) step = kHwLat[hw][kTree][p];
        lat += nsteps * step;
      }
    } else {
      double net_overhead = 0;
      if (nodes > 1) {
        net_overhead = in.intel_cpu ? kNetOverheadIntel : kNetOverheadAmd;
        if (p == index(Protocol::Simple)) net_overhead *= 3;
      }
      intra_lat = std::max(intra_lat, net_overhead);
      const int inter_steps = nodes == 1 ? 0 : all_reduce ? 2 * (nodes - 1) : nodes - 1;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
  } else if (all_reduce) {
    // Chain of ppn ranks inside each node plus a binary tree over the nodes, up and down.
    lat += 2 * ((ranks / nodes - 1) * intra_lat + floor_log2(nodes) * inter_lat);
  }
}

}  // namespace

const char* name(Algorithm a) {
  return a == Algorithm::Tree ? "tree" : "ring";
}

const char* name(Protocol p) {
  switch (p) {
    case Protocol::LL:
      return "LL";
    case Protocol::LL128:
      return "LL128";
    default:
      return "Simple";
  }
}

const char* name(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "allreduce";
    case Collective::AllGather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reducescatter";
    case Collective::Broadcast:
      return "broadcast";
    default:
      return "reduce";
  }
}

Estimate estimate(const TuningInput& in, Algorithm algorithm, Protocol protocol) {
  Estimate e;
  const int a = index(algorithm), p = index(protocol);
  if (in.ranks < 2 || in.nodes < 1 || in.channels < 1) return e;
  if (algorithm == Algorithm::Tree && in.op != Collective::AllReduce) return e;
  double bw = 0, lat = 0;
  tune(in, a, p, bw, lat);
  e.latency_us = lat;
  if (protocol == Protocol::LL128 && !ll128_enabled(in)) return e;
  if (bw <= 0) return e;
  e.enabled = true;
  e.bandwidth = bw;

  // ncclTopoGetAlgoTime, one operation.
  const int log_size = floor_log2(in.bytes >> 6);
  if (algorithm == Algorithm::Tree && in.op == Collective::AllReduce && log_size >= 0 &&
      log_size < kTreeCorrectionSizes)
    bw *= kTreeCorrection[p][log_size];
  // Ring Simple all-reduce across nodes plateaus below the model: latency x1.4 (x1.9 before
  // Ampere) once each rank sends at least 64 B per channel.
  if (algorithm == Algorithm::Ring && protocol == Protocol::Simple && in.nodes > 1 &&
      in.op == Collective::AllReduce &&
      in.bytes / (static_cast<int64_t>(in.channels) * in.ranks) >= 64)
    lat *= in.compute_capability < 80 ? 1.9 : 1.4;
  e.time_us = lat + static_cast<double>(in.bytes) / (1000.0 * bw);
  return e;
}

Algorithm choose_algorithm(const TuningInput& in, Protocol protocol) {
  const Estimate tree = estimate(in, Algorithm::Tree, protocol);
  const Estimate ring = estimate(in, Algorithm::Ring, protocol);
  if (tree.enabled && (!ring.enabled || tree.time_us <= ring.time_us)) return Algorithm::Tree;
  return Algorithm::Ring;
}

int channels_for(int64_t bytes, int comm_channels, Algorithm algorithm, Protocol protocol,
                 int ranks) {
  const int p = index(protocol);
  int64_t threshold = kThreadThreshold[p];
  if (algorithm == Algorithm::Ring && protocol == Protocol::LL) threshold *= ranks;
  const int64_t per_channel = kMaxThreads[p] * threshold;
  int nc = std::max(comm_channels, 1);
  while (nc > 1 && bytes < nc * per_channel) --nc;
  return nc;
}

int64_t crossover_bytes(TuningInput input, Algorithm a, Algorithm b, Protocol protocol) {
  constexpr int kFirst = 3, kLast = 36;  // 8 B .. 64 GiB
  int64_t from = -1;
  for (int l = kLast; l >= kFirst; --l) {
    input.bytes = int64_t{1} << l;
    const Estimate ea = estimate(input, a, protocol), eb = estimate(input, b, protocol);
    const bool beats = ea.enabled && (!eb.enabled || ea.time_us < eb.time_us);
    if (!beats) break;
    from = input.bytes;
  }
  return from;
}

}  // namespace fabtwin::nccl
