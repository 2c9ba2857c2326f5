// NCCL's collective algorithms as work plans: for every rank and channel, the slices it
// receives, reduces or copies, and sends, over which connections, cut the way NCCL's Simple
// protocol cuts them (buffer, steps, chunks, slices; docs/references.md §3.4-3.5, NCCL 2.30.7
// device code). A plan says what depends on what; the GPU node model decides when it happens.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/collectives/nccl_tuning.h"

namespace fabtwin::nccl {

enum class Op { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };
const char* name(Op op);
// nccl-tests' bus-bandwidth factor: busbw = algbw x factor (docs/references.md §3.2).
double bus_factor(Op op, int ranks);
// Elements nccl-tests reports in its "count" column for a "size" of `bytes`.
int64_t element_count(Op op, int64_t bytes, int type_bytes, int ranks);

struct PlanInput {
  Op op = Op::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  std::vector<int> rank_node;   // GPU node of each rank
  std::vector<int> rank_local;  // its GPU index within the node
  int channels = 1;
  int64_t bytes = 0;  // nccl-tests' "size": per-rank buffer (AG, RS, all-to-all: all n parts)
  int root = 0;       // broadcast, reduce
  int64_t buffer = 4 << 20;  // NCCL_BUFFSIZE per connection
  int steps = 8;             // NCCL_STEPS: buffer slots per connection
  int64_t p2p_chunk_net = 128 << 10;
  int64_t p2p_chunk_nvlink = 512 << 10;

  bool operator==(const PlanInput&) const = default;
};

// A one-way connection between two ranks on one channel. `slots`: messages (slices) that may
// be in flight before the receiver hands a buffer slot back.
struct Connection {
  int src = 0, dst = 0, channel = 0;
  int slots = 1;
};

// One slice: wait for one message on each `recv` connection and a free slot on each `send`
// connection, process `bytes` on the GPU, then send one message of `bytes` on each `send`.
struct Unit {
  std::array<int32_t, 3> recv{-1, -1, -1};
  std::array<int32_t, 3> send{-1, -1, -1};
  int64_t bytes = 0;
  uint32_t step = 0;  // NCCL primitive step, counted through the loops
};

// A sequence of units one group of a channel's threads runs in order. `share` is its part of
// the channel's threads (tree all-reduce splits them between reduce and broadcast).
struct Lane {
  int rank = 0, channel = 0, lane = 0;
  double share = 1.0;
  std::vector<Unit> units;
};

struct Plan {
  std::vector<Connection> connections;
  std::vector<Lane> lanes;
};

// The most NCCL steps a plan models per rank and channel: 2^24, far beyond any collective a GPU's
// memory holds (a 1 TiB ring all-reduce on 8 ranks and 2 channels takes about 2^19). make_plan
// throws std::length_error beyond it.
inline constexpr int64_t kMaxStepsPerLane = int64_t{1} << 24;

// Lanes only for ranks `want_rank` accepts (all when empty); the connections are always all.
Plan make_plan(const PlanInput& input, const std::function<bool(int)>& want_rank = {});

// The ring of `channel`: ranks in order. Nodes in order; each node's part starts at the GPU
// where the previous node's part ended (the channel's GPU a, then a - 1, alternately; a third
// GPU closes an odd ring), so that every hop between nodes joins GPUs with the same local index:
// the same rail on a rail-optimized fabric. Only an odd number of nodes with two GPUs each has
// one hop, the one closing the ring, between different local indices.
std::vector<int> ring_order(const PlanInput& input, int channel);

// NCCL's binary tree over n (trees.cc's rule): parent and two children of rank r, -1 if none.
struct BtreeLinks {
  int up = -1, down0 = -1, down1 = -1;
};
BtreeLinks btree(int n, int r);

// The tree of `channel` for every rank: the double binary tree over nodes (even channels use
// the btree, odd ones its mirror, or its shift by one for an odd node count) with a chain
// through each node's GPUs hanging off the GPU that talks to the network.
struct TreeLinks {
  int parent = -1;
  std::array<int, 3> children{-1, -1, -1};
};
std::vector<TreeLinks> tree_links(const PlanInput& input, int channel);

}  // namespace fabtwin::nccl
