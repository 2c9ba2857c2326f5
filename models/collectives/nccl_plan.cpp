#include "models/collectives/nccl_plan.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace fabtwin::nccl {
namespace {

constexpr int64_t kGrain = 512;  // Simple protocol: chunk sizes are multiples of 512 B

int64_t div_up(int64_t a, int64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);  // a + b - 1 would overflow for sizes near the limit
}

// The chunk of one loop: the full chunk, or what is left spread over `parts` (channels, or
// channels x ranks), rounded up to the grain.
int64_t loop_chunk(int64_t chunk, int64_t left, int64_t parts) {
  const int64_t real = std::min(chunk, div_up(left, parts));
  return div_up(std::max<int64_t>(real, 1), kGrain) * kGrain;
}

// Ranks grouped by node (nodes in order of their index), each group by local GPU index.
std::vector<std::vector<int>> ranks_by_node(const PlanInput& in) {
  std::map<int, std::vector<int>> groups;
  for (int r = 0; r < static_cast<int>(in.rank_node.size()); ++r) {
    groups[in.rank_node[r]].push_back(r);
  }
  std::vector<std::vector<int>> out;
  for (auto& [node, ranks] : groups) {
    std::sort(ranks.begin(), ranks.end(),
              [&](int a, int b) { return in.rank_local[a] < in.rank_local[b]; });
    out.push_back(std::move(ranks));
  }
  return out;
}

class Builder {
 public:
  Builder(const PlanInput& in, const std::function<bool(int)>& want)
      : in_(in), want_(want), n_(static_cast<int>(in.rank_node.size())) {}

  int connection(int src, int dst, int channel, int slots) {
    const auto key = std::make_tuple(src, dst, channel);
    if (const auto it = index_.find(key); it != index_.end()) return it->second;
    plan_.connections.push_back({src, dst, channel, slots});
    return index_[key] = static_cast<int>(plan_.connections.size()) - 1;
  }
  // A lane for (rank, channel, lane), or -1 when the rank is not wanted.
  int lane(int rank, int channel, int lane, double share) {
    if (want_ && !want_(rank)) return -1;
    plan_.lanes.push_back({rank, channel, lane, share, {}});
    return static_cast<int>(plan_.lanes.size()) - 1;
  }
  // The lane at `index` (null for -1); valid until the next lane() call.
  Lane* at(int index) { return index < 0 ? nullptr : &plan_.lanes[index]; }
  // A collective too large to model (its steps would not fit a lane's counter, or its plan the
  // memory) is refused before its loops run long.
  static void check_steps(int64_t steps) {
    if (steps > kMaxStepsPerLane) {
      throw std::length_error("expected a collective of at most " +
                              std::to_string(kMaxStepsPerLane) +
                              " NCCL steps per rank and channel, found more");
    }
  }
  // A lane's step counter, advanced.
  static uint32_t next(uint32_t& step) {
    check_steps(int64_t{step} + 1);
    return step++;
  }
  // One NCCL primitive on `bytes`, cut into `slices_per_chunk` slices as the Simple protocol's
  // generic loop cuts them (it always runs once, so an empty chunk still costs a step).
  static void primitive(Lane* l, int recv, int send, int64_t bytes, uint32_t step,
                        int slices_per_chunk, int64_t slice_size) {
    if (!l) return;
    const int64_t each =
        std::max(div_up(bytes, 16 * int64_t{slices_per_chunk}) * 16, slice_size / 32);
    int64_t offset = 0;
    int slice = 0;
    do {
      Unit u;
      u.recv[0] = recv;
      u.send[0] = send;
      u.bytes = std::clamp<int64_t>(bytes - offset, 0, each);
      u.step = step;
      l->units.push_back(u);
      ++slice;
      offset += each;
    } while (slice < slices_per_chunk && offset < bytes);
  }

  Plan build() {
    if (n_ < 1) throw std::invalid_argument("a collective needs at least one rank");
    switch (in_.op) {
      case Op::AllReduce:
        in_.algorithm == Algorithm::Tree ? tree_all_reduce() : ring_all_reduce();
        break;
      case Op::AllGather:
      case Op::ReduceScatter:
        ring_gather_scatter();
        break;
      case Op::Broadcast:
      case Op::Reduce:
        ring_chain();
        break;
      case Op::AllToAll:
      case Op::SendRecv:
        point_to_point();
        break;
    }
    // A rank alone has nothing to move: its lanes are dropped and it finishes at launch.
    std::erase_if(plan_.lanes, [](const Lane& l) { return l.units.empty(); });
    return std::move(plan_);
  }

 private:
  int64_t step_size() const { return in_.buffer / in_.steps; }

  // Ring all-reduce: per loop, n chunks per channel; each rank sends one, then n-2
  // receive-reduce-sends, a receive-reduce-copy-send of its own chunk, n-2 receive-copy-sends
  // and a final receive: 2(n-1) transfers each way (runRing in all_reduce.h).
  void ring_all_reduce() {
    const int chunk_steps = in_.steps / 2, slice_steps = in_.steps / 4;
    const int64_t chunk = step_size() * chunk_steps;
    const int64_t slice = step_size() * slice_steps;
    const int spc = chunk_steps / slice_steps;
    const int64_t size = in_.bytes;
    const int64_t loop = int64_t{in_.channels} * n_ * chunk;
    for_each_ring_position(in_.steps / slice_steps, [&](int c, int p, Lane* l, int send, int recv) {
      uint32_t step = 0;
      int64_t grid = 0;
      do {
        const int64_t real = loop_chunk(chunk, size - grid, int64_t{in_.channels} * n_);
        auto bytes_of = [&](int j) {
          const int64_t offset = grid + (int64_t{c} * n_ + j) * real;
          return std::clamp<int64_t>(size - offset, 0, real);
        };
        auto chunk_at = [&](int j) { return ((p - j) % n_ + n_) % n_; };
        if (n_ > 1) {
          primitive(l, -1, send, bytes_of(chunk_at(1)), next(step), spc, slice);
          for (int j = 2; j < n_; ++j) {
            primitive(l, recv, send, bytes_of(chunk_at(j)), next(step), spc, slice);
          }
          primitive(l, recv, send, bytes_of(p), next(step), spc, slice);
          for (int j = 1; j < n_ - 1; ++j) {
            primitive(l, recv, send, bytes_of(chunk_at(j)), next(step), spc, slice);
          }
          primitive(l, recv, -1, bytes_of((p + 1) % n_), next(step), spc, slice);
        }
        grid += loop;
      } while (grid < size);
    });
  }

  // Ring all-gather and reduce-scatter: per loop one chunk of each rank's part per channel;
  // n-1 transfers each way (send, n-2 receive-(reduce-)copy-sends, final receive).
  void ring_gather_scatter() {
    const int chunk_steps = in_.steps / 2, slice_steps = in_.steps / 4;
    const int64_t chunk = step_size() * chunk_steps;
    const int64_t slice = step_size() * slice_steps;
    const int spc = chunk_steps / slice_steps;
    const int64_t part = in_.bytes / n_;  // one rank's part
    const int64_t loop = int64_t{in_.channels} * chunk;
    for_each_ring_position(in_.steps / slice_steps, [&](int c, int, Lane* l, int send, int recv) {
      uint32_t step = 0;
      int64_t grid = 0;
      do {
        const int64_t real = loop_chunk(chunk, part - grid, in_.channels);
        const int64_t bytes = std::clamp<int64_t>(part - grid - c * real, 0, real);
        if (n_ > 1) {
          primitive(l, -1, send, bytes, next(step), spc, slice);
          for (int j = 2; j < n_; ++j) primitive(l, recv, send, bytes, next(step), spc, slice);
          primitive(l, recv, -1, bytes, next(step), spc, slice);
        }
        grid += loop;
      } while (grid < part);
    });
  }

  // Calls body(channel, position, lane, send, receive) for every rank of every channel's ring:
  // its lane (null when not wanted) and its connections to the next and from the previous rank.
  template <typename Body>
  void for_each_ring_position(int slots, Body body) {
    for (int c = 0; c < in_.channels; ++c) {
      const std::vector<int> ring = ring_order(in_, c);
      for (int p = 0; p < n_; ++p) {
        const int me = ring[p];
        Lane* l = at(lane(me, c, 0, 1.0));
        const int send = connection(me, ring[(p + 1) % n_], c, slots);
        const int recv = connection(ring[(p + n_ - 1) % n_], me, c, slots);
        body(c, p, l, send, recv);
      }
    }
  }

  // Broadcast and reduce: a chain around the ring from the root (broadcast) or to it
  // (reduce); one step per chunk, chunk = one buffer step.
  void ring_chain() {
    const int64_t chunk = step_size();
    const int slots = in_.steps;
    const int64_t size = in_.bytes;
    const int64_t loop = int64_t{in_.channels} * chunk;
    for (int c = 0; c < in_.channels; ++c) {
      std::vector<int> ring = ring_order(in_, c);
      const auto root_at = std::find(ring.begin(), ring.end(), in_.root);
      std::rotate(ring.begin(), root_at, ring.end());  // root first
      if (in_.op == Op::Reduce) std::rotate(ring.begin(), ring.begin() + 1, ring.end());
      for (int q = 0; q < n_; ++q) {
        const int me = ring[q];
        Lane* l = at(lane(me, c, 0, 1.0));
        const int send = q + 1 < n_ ? connection(me, ring[q + 1], c, slots) : -1;
        const int recv = q > 0 ? connection(ring[q - 1], me, c, slots) : -1;
        uint32_t step = 0;
        int64_t grid = 0;
        do {
          const int64_t real = loop_chunk(chunk, size - grid, in_.channels);
          const int64_t bytes = std::clamp<int64_t>(size - grid - c * real, 0, real);
          if (n_ > 1) primitive(l, recv, send, bytes, next(step), 1, chunk);
          grid += loop;
        } while (grid < size);
      }
    }
  }

  // Tree all-reduce: per chunk, reduce up the tree (receive from the children, send to the
  // parent) and broadcast down (receive from the parent, send to the children), each on half
  // of the channel's threads; the root does both in one pass.
  void tree_all_reduce() {
    // Smaller chunks keep a deep tree's pipeline full: NCCL halves the Simple tree chunk while
    // a channel would get fewer than 8, 4 or 1 chunks per level of depth (enqueue.cc,
    // ncclPatternTreeUpDown), down to 128, 64 and 32 KiB.
    const std::vector<std::vector<int>> nodes = ranks_by_node(in_);
    int log2_nodes = 0;
    while ((2 << log2_nodes) <= static_cast<int>(nodes.size())) ++log2_nodes;
    const int64_t depth =
        static_cast<int64_t>(in_.rank_node.size() / nodes.size()) - 1 + log2_nodes;
    int64_t chunk = step_size();
    auto per_channel = [&] { return in_.bytes / (int64_t{in_.channels} * chunk); };
    while (per_channel() < depth * 8 && chunk > (128 << 10)) chunk /= 2;
    while (per_channel() < depth * 4 && chunk > (64 << 10)) chunk /= 2;
    while (per_channel() < depth && chunk > (32 << 10)) chunk /= 2;
    const int slots = in_.steps;
    const int64_t size = in_.bytes;
    const int64_t loop = int64_t{in_.channels} * chunk;
    for (int c = 0; c < in_.channels; ++c) {
      const std::vector<TreeLinks> links = tree_links(in_, c);
      for (int r = 0; r < n_; ++r) {
        const TreeLinks& t = links[r];
        std::array<int32_t, 3> from_children{-1, -1, -1}, to_children{-1, -1, -1};
        for (int i = 0; i < 3; ++i) {
          if (t.children[i] < 0) continue;
          from_children[i] = connection(t.children[i], r, c, slots);
          to_children[i] = connection(r, t.children[i], c, slots);
        }
        const int to_parent = t.parent >= 0 ? connection(r, t.parent, c, slots) : -1;
        const int from_parent = t.parent >= 0 ? connection(t.parent, r, c, slots) : -1;
        const int up_index = lane(r, c, 0, t.parent >= 0 ? 0.5 : 1.0);
        const int down_index = t.parent >= 0 ? lane(r, c, 1, 0.5) : -1;
        uint32_t step = 0;
        int64_t grid = 0;
        do {
          const int64_t real = loop_chunk(chunk, size - grid, in_.channels);
          const int64_t bytes = std::clamp<int64_t>(size - grid - c * real, 0, real);
          Unit u;
          u.bytes = bytes;
          u.step = step;
          if (Lane* up = at(up_index)) {
            Unit a = u;
            a.recv = from_children;
            if (t.parent >= 0) {
              a.send = {to_parent, -1, -1};
            } else {
              a.send = to_children;
            }
            if (n_ > 1) up->units.push_back(a);
          }
          if (Lane* down = at(down_index)) {
            Unit b = u;
            b.recv = {from_parent, -1, -1};
            b.send = to_children;
            down->units.push_back(b);
          }
          next(step);
          grid += loop;
        } while (grid < size);
      }
    }
  }

  // All-to-all and send/receive: each pair's bytes cut into p2p chunks (128 KiB over the
  // network, 512 KiB over NVLink), sends and receives on separate thread groups. All-to-all
  // pairs rank r with r+d for d = 1..n-1 on channel d mod channels; send/receive pairs r with
  // r+1 and spreads the bytes over all channels.
  void point_to_point() {
    const int slots = in_.steps;
    struct Pair {
      int distance, channel;
      int64_t bytes;
    };
    std::vector<Pair> pairs;
    if (in_.op == Op::AllToAll) {
      const int64_t per_peer = in_.bytes / n_;
      for (int d = 1; d < n_; ++d) pairs.push_back({d, d % in_.channels, per_peer});
    } else if (n_ > 1) {
      const int64_t per_channel = div_up(div_up(in_.bytes, in_.channels), 16) * 16;
      for (int c = 0; c < in_.channels; ++c) {
        const int64_t b = std::clamp<int64_t>(in_.bytes - c * per_channel, 0, per_channel);
        pairs.push_back({1, c, b});
      }
    }
    for (int r = 0; r < n_; ++r) {
      std::vector<int> sends(in_.channels, -1), recvs(in_.channels, -1);
      for (int c = 0; c < in_.channels; ++c) {
        sends[c] = lane(r, c, 0, 0.5);
        recvs[c] = lane(r, c, 1, 0.5);
      }
      for (const Pair& pr : pairs) {
        const int to = (r + pr.distance) % n_, from = (r - pr.distance % n_ + n_) % n_;
        const int send = connection(r, to, pr.channel, slots);
        const int recv = connection(from, r, pr.channel, slots);
        auto chunked = [&](int index, int peer, int rc, int sc) {
          const int64_t piece =
              in_.rank_node[peer] == in_.rank_node[r] ? in_.p2p_chunk_nvlink : in_.p2p_chunk_net;
          check_steps(div_up(pr.bytes, piece));
          Lane* l = at(index);
          if (!l) return;
          int64_t offset = 0;
          uint32_t step = static_cast<uint32_t>(l->units.size());
          do {
            Unit u;
            u.recv[0] = rc;
            u.send[0] = sc;
            u.bytes = std::min(piece, pr.bytes - offset);
            u.step = next(step);
            l->units.push_back(u);
            offset += piece;
          } while (offset < pr.bytes);
        };
        chunked(sends[pr.channel], to, -1, send);
        chunked(recvs[pr.channel], from, recv, -1);
      }
    }
  }

  const PlanInput& in_;
  const std::function<bool(int)>& want_;
  int n_;
  Plan plan_;
  std::map<std::tuple<int, int, int>, int> index_;
};

}  // namespace

const char* name(Op op) {
  switch (op) {
    case Op::AllReduce:
      return "all_reduce";
    case Op::AllGather:
      return "all_gather";
    case Op::ReduceScatter:
      return "reduce_scatter";
    case Op::Broadcast:
      return "broadcast";
    case Op::Reduce:
      return "reduce";
    case Op::AllToAll:
      return "all_to_all";
    case Op::SendRecv:
      return "send_recv";
  }
  return "?";
}

double bus_factor(Op op, int ranks) {
  const double n = ranks;
  switch (op) {
    case Op::AllReduce:
      return 2 * (n - 1) / n;
    case Op::AllGather:
    case Op::ReduceScatter:
    case Op::AllToAll:
      return (n - 1) / n;
    case Op::Broadcast:
    case Op::Reduce:
    case Op::SendRecv:
      return 1;
  }
  return 1;
}

int64_t element_count(Op op, int64_t bytes, int type_bytes, int ranks) {
  switch (op) {
    case Op::AllGather:
    case Op::ReduceScatter:
    case Op::AllToAll:
      return bytes / (int64_t{type_bytes} * ranks);
    default:
      return bytes / type_bytes;
  }
}

std::vector<int> ring_order(const PlanInput& in, int channel) {
  std::vector<int> ring;
  const std::vector<std::vector<int>> nodes = ranks_by_node(in);
  const int k_nodes = static_cast<int>(nodes.size());
  // Local index at which node k's part of the ring starts: alternately a and b = a - 1, and a
  // third index for the last of an odd number of nodes, so that every node starts where the
  // one before it ends. Two GPUs per node and an odd node count leave no third index: the hop
  // that closes the ring then changes local index.
  auto entry = [&](int k) {
    const int m = static_cast<int>(nodes[k].size());
    const int a = channel % m, b = (a + m - 1) % m;
    if (k_nodes % 2 == 1 && k == k_nodes - 1 && k > 0 && m >= 3) return (a + m - 2) % m;
    return k % 2 == 0 ? a : b;
  };
  for (int k = 0; k < k_nodes; ++k) {
    const std::vector<int>& l = nodes[k];
    const int m = static_cast<int>(l.size());
    const int s = entry(k);
    const int e = k_nodes > 1 ? entry((k + 1) % k_nodes) % m : s;
    ring.push_back(l[s]);
    for (int i = 1; i < m; ++i) {  // the others in rotation order, the exit last
      const int local = (s + i) % m;
      if (local != e) ring.push_back(l[local]);
    }
    if (e != s) ring.push_back(l[e]);
  }
  return ring;
}

BtreeLinks btree(int n, int r) {
  BtreeLinks t;
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1;
  if (r == 0) {
    t.down1 = n > 1 ? bit >> 1 : -1;
    return t;
  }
  t.up = (r ^ bit) | (bit << 1);
  if (t.up >= n) t.up = r ^ bit;
  int low = bit >> 1;
  t.down0 = low == 0 ? -1 : r - low;
  t.down1 = low == 0 ? -1 : r + low;
  while (t.down1 >= n) {
    low >>= 1;
    t.down1 = low == 0 ? -1 : r + low;
  }
  return t;
}

std::vector<TreeLinks> tree_links(const PlanInput& in, int channel) {
  const std::vector<std::vector<int>> nodes = ranks_by_node(in);
  const int k = static_cast<int>(nodes.size());
  std::vector<TreeLinks> links(in.rank_node.size());
  auto head = [&](int node) {
    const std::vector<int>& l = nodes[node];
    return l[channel % static_cast<int>(l.size())];
  };
  // Node-level links of node `v` in this channel's tree (btree, or its mirror / shift).
  auto node_links = [&](int v) {
    if (channel % 2 == 0) return btree(k, v);
    const bool mirror = k % 2 == 0;
    auto to = [&](int x) { return mirror ? k - 1 - x : (x - 1 + k) % k; };
    auto back = [&](int x) { return x < 0 ? -1 : mirror ? k - 1 - x : (x + 1) % k; };
    BtreeLinks t = btree(k, to(v));
    return BtreeLinks{back(t.up), back(t.down0), back(t.down1)};
  };
  for (int v = 0; v < k; ++v) {
    const std::vector<int>& l = nodes[v];
    const int m = static_cast<int>(l.size());
    const int s = channel % m;
    const BtreeLinks t = node_links(v);
    int filled = 0;
    TreeLinks& h = links[head(v)];
    h.parent = t.up >= 0 ? head(t.up) : -1;
    for (int child : {t.down0, t.down1}) {
      if (child >= 0) h.children[filled++] = head(child);
    }
    for (int i = 1; i < m; ++i) {  // the chain through the node's other GPUs
      const int rank = l[(s + i) % m], above = l[(s + i - 1) % m];
      links[rank].parent = above;
      TreeLinks& a = links[above];
      a.children[above == head(v) ? filled : 0] = rank;
    }
  }
  return links;
}

Plan make_plan(const PlanInput& input, const std::function<bool(int)>& want_rank) {
  return Builder(input, want_rank).build();
}

}  // namespace fabtwin::nccl
