// NCCL collectives: the work plans (rings, double binary trees, chunking, the bytes each rank
// moves) checked against NCCL's rules without simulating, then whole runs on small
// rail-optimized fabrics (nccl-tests rows, bandwidth bounds, determinism across threads, the
// timeline, scenario errors).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "models/collectives/nccl_plan.h"
#include "models/fabric/fabric.h"
#include "test_support.h"

using namespace fabtwin;
using nccl::Op;

namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGrain = 512;  // Simple protocol chunk granule
const std::vector<Op> kAllOps{Op::AllReduce, Op::AllGather, Op::ReduceScatter, Op::Broadcast,
                              Op::Reduce,    Op::AllToAll,  Op::SendRecv};

// ---------------------------------------------------------------------------------------------
// Plan helpers

// `nodes` GPU nodes of `gpus` GPUs each, rank r = GPU r (node-major).
nccl::PlanInput layout(int nodes, int gpus) {
  nccl::PlanInput in;
  for (int r = 0; r < nodes * gpus; ++r) {
    in.rank_node.push_back(r / gpus);
    in.rank_local.push_back(r % gpus);
  }
  return in;
}

nccl::PlanInput plan_input(Op op, int nodes, int gpus, int64_t bytes, int channels,
                           nccl::Algorithm algorithm = nccl::Algorithm::Ring, int root = 0) {
  nccl::PlanInput in = layout(nodes, gpus);
  in.op = op;
  in.algorithm = algorithm;
  in.bytes = bytes;
  in.channels = channels;
  in.root = root;
  return in;
}

// Bytes rank `src` sends to rank `dst` (every send of every unit), over all channels.
std::map<std::pair<int, int>, int64_t> sent_between(const nccl::Plan& p) {
  std::map<std::pair<int, int>, int64_t> out;
  for (const nccl::Lane& l : p.lanes) {
    for (const nccl::Unit& u : l.units) {
      for (int32_t c : u.send) {
        if (c >= 0) out[{p.connections[c].src, p.connections[c].dst}] += u.bytes;
      }
    }
  }
  return out;
}

std::map<int, int64_t> sent_by_rank(const nccl::Plan& p) {
  std::map<int, int64_t> out;
  for (const auto& [pair, bytes] : sent_between(p)) out[pair.first] += bytes;
  return out;
}

std::map<int, int64_t> received_by_rank(const nccl::Plan& p) {
  std::map<int, int64_t> out;
  for (const auto& [pair, bytes] : sent_between(p)) out[pair.second] += bytes;
  return out;
}

int64_t messages_sent(const nccl::Plan& p) {
  int64_t n = 0;
  for (const nccl::Lane& l : p.lanes) {
    for (const nccl::Unit& u : l.units) {
      for (int32_t c : u.send) n += c >= 0;
    }
  }
  return n;
}

// What makes a plan executable: every connection joins two different ranks on one channel, is
// sent on by exactly one lane of its source and received on by exactly one lane of its
// destination, and the k-th message sent is the k-th received, with the same bytes. Steps
// never go backwards within a lane.
void check_consistent(const nccl::Plan& p, int ranks) {
  const size_t nc = p.connections.size();
  std::vector<std::vector<int64_t>> sent(nc), received(nc);
  std::vector<std::set<size_t>> send_lanes(nc), recv_lanes(nc);
  for (size_t c = 0; c < nc; ++c) {
    const nccl::Connection& k = p.connections[c];
    INFO("connection " << c << ": " << k.src << " -> " << k.dst << " channel " << k.channel);
    CHECK(k.src != k.dst);
    CHECK((k.src >= 0 && k.src < ranks && k.dst >= 0 && k.dst < ranks));
    CHECK(k.slots >= 1);
  }
  for (size_t li = 0; li < p.lanes.size(); ++li) {
    const nccl::Lane& l = p.lanes[li];
    uint32_t last_step = 0;
    for (const nccl::Unit& u : l.units) {
      INFO("rank " << l.rank << " channel " << l.channel << " lane " << l.lane << " step "
                   << u.step);
      CHECK(u.step >= last_step);
      last_step = u.step;
      CHECK(u.bytes >= 0);
      for (int32_t c : u.recv) {
        if (c < 0) continue;
        REQUIRE(c < static_cast<int32_t>(nc));
        CHECK(p.connections[c].dst == l.rank);
        CHECK(p.connections[c].channel == l.channel);
        received[c].push_back(u.bytes);
        recv_lanes[c].insert(li);
      }
      for (int32_t c : u.send) {
        if (c < 0) continue;
        REQUIRE(c < static_cast<int32_t>(nc));
        CHECK(p.connections[c].src == l.rank);
        CHECK(p.connections[c].channel == l.channel);
        sent[c].push_back(u.bytes);
        send_lanes[c].insert(li);
      }
    }
  }
  for (size_t c = 0; c < nc; ++c) {
    const nccl::Connection& k = p.connections[c];
    INFO("connection " << c << ": " << k.src << " -> " << k.dst << " channel " << k.channel);
    CHECK(send_lanes[c].size() == 1);
    CHECK(recv_lanes[c].size() == 1);
    CHECK(sent[c] == received[c]);
  }
}

// ---------------------------------------------------------------------------------------------
// Run helpers

nlohmann::json rail(int nodes, int gpus, const nlohmann::json& generator,
                    const std::string& rate = "100Gbps") {
  return {{"topology",
           {{"type", "rail_optimized"}, {"nodes", nodes}, {"gpus_per_node", gpus}, {"spines", 1}}},
          {"fabric", {{"link", {{"rate", rate}, {"delay", "1us"}}}}},
          {"traffic", nlohmann::json::array({generator})}};
}

ScenarioDocument document(const nlohmann::json& scenario) {
  return testing::inline_document(scenario);
}

RunResult run(const nlohmann::json& scenario, int threads = 1) {
  Fabric fabric(document(scenario), threads);
  return fabric.run();
}

// Bytes the spine switches sent: traffic that left its rail.
int64_t spine_bytes(const RunResult& r) {
  int64_t bytes = 0;
  for (const PortRecord& p : r.ports) {
    if (p.node.rfind("spine", 0) == 0) bytes += p.tx_bytes();
  }
  return bytes;
}

// The ScenarioError message building a fabric from `scenario` throws ("" if none).
std::string scenario_error(const nlohmann::json& scenario) {
  try {
    Fabric fabric(document(scenario), 1);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

bool close(double a, double b, double relative) {
  return std::abs(a - b) <= relative * std::max(std::abs(a), std::abs(b));
}

using StepTuple = std::tuple<uint32_t, uint32_t, uint32_t, uint16_t, uint16_t, uint32_t, int32_t,
                             int32_t, int64_t, int64_t, int64_t>;
std::vector<StepTuple> steps_of(const RunResult& r) {
  std::vector<StepTuple> out;
  for (const CollectiveStepRecord& s : r.collective_steps) {
    out.emplace_back(s.row, s.iteration, s.rank, s.channel, s.lane, s.step, s.recv_peer,
                     s.send_peer, s.bytes, s.start.ps, s.end.ps);
  }
  return out;
}

using TransferTuple =
    std::tuple<uint32_t, uint32_t, uint16_t, int, uint32_t, uint32_t, int64_t, int64_t, int64_t>;
std::vector<TransferTuple> transfers_of(const RunResult& r) {
  std::vector<TransferTuple> out;
  for (const CollectiveTransferRecord& t : r.collective_transfers) {
    out.emplace_back(t.row, t.iteration, t.channel, static_cast<int>(t.transport), t.src_rank,
                     t.dst_rank, t.bytes, t.posted.ps, t.arrived.ps);
  }
  return out;
}

using RowTuple = std::tuple<uint32_t, std::string, std::string, std::string, int64_t, int64_t,
                            std::string, std::string, int, int, std::vector<uint32_t>, int, int,
                            double, double, double, int64_t, int64_t>;
RowTuple row_of(const CollectiveRow& c) {
  return {c.generator,  c.op,      c.algorithm, c.protocol, c.size,     c.count,
          c.type,       c.redop,   c.root,      c.ranks,    c.gpus,     c.channels,
          c.iterations, c.time_us, c.algbw,     c.busbw,    c.start.ps, c.end.ps};
}

// The timeline of a run: every step ends after it starts, every network and NVLink transfer
// arrives after it was posted, and no rank's first step of a row's first timed iteration starts
// before the launch latency (nccl.base_latency) has passed since the row's start.
void check_timeline(const Fabric& fabric, const RunResult& r) {
  const CollectiveSetup& setup = fabric.collectives();
  REQUIRE_FALSE(r.collective_steps.empty());
  std::map<std::pair<uint32_t, uint32_t>, Time> first;  // (row, rank) -> first step start
  for (const CollectiveStepRecord& s : r.collective_steps) {
    INFO("row " << s.row << " iteration " << s.iteration << " rank " << s.rank << " channel "
                << s.channel << " step " << s.step);
    CHECK(s.end >= s.start);
    REQUIRE(s.row < setup.ops.size());
    if (s.iteration != static_cast<uint32_t>(setup.specs[setup.ops[s.row].spec].warmup)) continue;
    auto [it, fresh] = first.try_emplace({s.row, s.rank}, s.start);
    if (!fresh) it->second = std::min(it->second, s.start);
  }
  for (const auto& [key, start] : first) {
    INFO("row " << key.first << " rank " << key.second);
    REQUIRE(key.first < r.collectives.size());
    CHECK(start >= r.collectives[key.first].start + setup.nccl.base_latency);
  }
  for (const CollectiveTransferRecord& t : r.collective_transfers) {
    INFO("row " << t.row << " " << t.src_rank << " -> " << t.dst_rank << " channel " << t.channel
                << " transport " << static_cast<int>(t.transport));
    CHECK(t.transport != CollectiveTransport::None);
    CHECK(t.arrived > t.posted);
  }
}

// The run did the whole plan of each row: as many transfers and bytes as the plan sends.
void check_runs_whole_plan(const Fabric& fabric, const RunResult& r) {
  const CollectiveSetup& setup = fabric.collectives();
  for (uint32_t i = 0; i < setup.ops.size(); ++i) {
    const nccl::Plan plan = nccl::make_plan(setup.ops[i].plan);
    int64_t planned_bytes = 0;
    for (const auto& [pair, b] : sent_between(plan)) planned_bytes += b;
    int64_t messages = 0, bytes = 0;
    for (const CollectiveTransferRecord& t : r.collective_transfers) {
      if (t.row != i) continue;
      ++messages;
      bytes += t.bytes;
    }
    INFO("row " << i << " (" << r.collectives[i].op << ", " << r.collectives[i].size << " B)");
    const CollectiveSpec& spec = setup.specs[setup.ops[i].spec];
    const int iterations = spec.warmup + spec.iterations;
    CHECK(messages == messages_sent(plan) * iterations);
    CHECK(bytes == planned_bytes * iterations);
  }
}

}  // namespace

// =============================================================================================
// A. Plans

TEST_CASE("ring_order: each rank once per channel, nodes contiguous", "[collectives]") {
  for (const auto& [nodes, gpus] : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 8}, {2, 1}, {2, 2}, {2, 8}, {3, 2}, {3, 8}, {4, 4}, {5, 1}, {8, 8}}) {
    const nccl::PlanInput in = layout(nodes, gpus);
    const int n = nodes * gpus;
    for (int c = 0; c < 16; ++c) {
      INFO(nodes << " nodes x " << gpus << " GPUs, channel " << c);
      const std::vector<int> ring = nccl::ring_order(in, c);
      REQUIRE(static_cast<int>(ring.size()) == n);
      std::vector<int> sorted = ring;
      std::sort(sorted.begin(), sorted.end());
      for (int r = 0; r < n; ++r) CHECK(sorted[r] == r);
      // Going once around the ring, the node changes exactly once per node (never when one).
      int changes = 0;
      for (int p = 0; p < n; ++p)
        changes += in.rank_node[ring[p]] != in.rank_node[ring[(p + 1) % n]];
      CHECK(changes == (nodes > 1 ? nodes : 0));
      // Nodes in order of their index.
      for (int p = 0; p + 1 < n; ++p) CHECK(in.rank_node[ring[p]] <= in.rank_node[ring[p + 1]]);
    }
  }
}

TEST_CASE("ring_order: one GPU per node gives the ring 0..n-1", "[collectives]") {
  for (int n : {1, 2, 3, 7, 16}) {
    const nccl::PlanInput in = layout(n, 1);
    std::vector<int> expected(n);
    for (int r = 0; r < n; ++r) expected[r] = r;
    for (int c = 0; c < 16; ++c) {
      INFO(n << " nodes, channel " << c);
      CHECK(nccl::ring_order(in, c) == expected);
    }
  }
}

namespace {
// Inter-node hops of `channel`'s ring (wrap-around included) that join GPUs of different local
// index, i.e. that leave the rail on a rail-optimized fabric.
std::vector<std::string> off_rail_hops(const nccl::PlanInput& in, int channel) {
  const std::vector<int> ring = nccl::ring_order(in, channel);
  const int n = static_cast<int>(ring.size());
  std::vector<std::string> out;
  for (int p = 0; p < n; ++p) {
    const int a = ring[p], b = ring[(p + 1) % n];
    if (in.rank_node[a] != in.rank_node[b] && in.rank_local[a] != in.rank_local[b]) {
      out.push_back(std::to_string(a) + "->" + std::to_string(b));
    }
  }
  return out;
}
}  // namespace

TEST_CASE("ring_order: inter-node hops stay on one rail (even node counts)", "[collectives]") {
  for (const auto& [nodes, gpus] :
       std::vector<std::pair<int, int>>{{2, 8}, {2, 2}, {4, 4}, {4, 8}, {8, 2}}) {
    const nccl::PlanInput in = layout(nodes, gpus);
    for (int c = 0; c < 16; ++c) {
      INFO(nodes << " nodes x " << gpus << " GPUs, channel " << c);
      CHECK(off_rail_hops(in, c).empty());
    }
    // Channels enter each node at different GPUs, spreading the rings over the rails.
    std::set<int> entries;
    for (int c = 0; c < gpus; ++c) entries.insert(nccl::ring_order(in, c).front());
    CHECK(static_cast<int>(entries.size()) == gpus);
  }
}

// ring_order's contract for an odd number of nodes: with three or more GPUs per node every hop
// stays on a rail (a third GPU closes the ring); with two there is no third GPU, and exactly
// the hop that closes the ring changes local index.
TEST_CASE("ring_order: inter-node hops stay on one rail (odd node counts)", "[collectives]") {
  for (const auto& [nodes, gpus] : std::vector<std::pair<int, int>>{{3, 3}, {3, 8}, {5, 4}}) {
    const nccl::PlanInput in = layout(nodes, gpus);
    for (int c = 0; c < gpus; ++c) {
      const std::vector<std::string> off = off_rail_hops(in, c);
      INFO(nodes << " nodes x " << gpus << " GPUs, channel " << c << ": off-rail hops "
                 << Catch::Detail::stringify(off));
      CHECK(off.empty());
    }
  }
  const nccl::PlanInput two = layout(3, 2);
  for (int c = 0; c < 2; ++c) {
    const std::vector<int> ring = nccl::ring_order(two, c);
    const std::vector<std::string> off = off_rail_hops(two, c);
    INFO("3 nodes x 2 GPUs, channel " << c);
    REQUIRE(off.size() == 1);
    CHECK(off[0] == std::to_string(ring.back()) + "->" + std::to_string(ring.front()));
  }
  // In a run: 3 nodes x 4 GPUs keep the ring off the spines; 3 x 2 send the closing hop there.
  const RunResult r = run(rail(
      3, 4,
      {{"type", "collective"}, {"op", "all_reduce"}, {"size", "4MiB"}, {"algorithm", "ring"}}));
  CHECK(spine_bytes(r) == 0);
  const RunResult r2 = run(rail(
      3, 2,
      {{"type", "collective"}, {"op", "all_reduce"}, {"size", "4MiB"}, {"algorithm", "ring"}}));
  CHECK(spine_bytes(r2) > 0);
}

TEST_CASE("btree: NCCL's binary tree for 1..64 ranks", "[collectives]") {
  for (int n = 1; n <= 64; ++n) {
    INFO("n = " << n);
    int roots = 0;
    int children_total = 0;
    for (int r = 0; r < n; ++r) {
      INFO("rank " << r);
      const nccl::BtreeLinks t = nccl::btree(n, r);
      for (int child : {t.down0, t.down1}) {
        if (child < 0) continue;
        ++children_total;
        CHECK(child < n);
        CHECK(child != r);
        CHECK(nccl::btree(n, child).up == r);
      }
      if (t.down0 >= 0) CHECK(t.down0 < r);  // in-order: left child below, right child above
      if (t.down1 >= 0) CHECK(t.down1 > r);
      if (t.up < 0) {
        ++roots;
        CHECK(r == 0);
        continue;
      }
      CHECK(t.up < n);
      const nccl::BtreeLinks parent = nccl::btree(n, t.up);
      CHECK((parent.down0 == r || parent.down1 == r));
      // Walking up reaches rank 0 in at most log2(n) + 1 hops.
      int x = r, hops = 0;
      while (x != 0 && hops <= 7) {
        x = nccl::btree(n, x).up;
        ++hops;
        REQUIRE(x >= 0);
      }
      CHECK(x == 0);
      CHECK(hops <= static_cast<int>(std::ceil(std::log2(n))) + 1);
    }
    CHECK(roots == 1);
    CHECK(children_total == n - 1);
  }
  // NCCL trees.cc's examples.
  auto links = [](int n, int r) {
    const nccl::BtreeLinks t = nccl::btree(n, r);
    return std::make_tuple(t.up, t.down0, t.down1);
  };
  CHECK(links(4, 0) == std::make_tuple(-1, -1, 2));
  CHECK(links(4, 2) == std::make_tuple(0, 1, 3));
  CHECK(links(4, 1) == std::make_tuple(2, -1, -1));
  CHECK(links(4, 3) == std::make_tuple(2, -1, -1));
  // n = 8: 0 -> 4 -> {2, 6}, 2 -> {1, 3}, 6 -> {5, 7}.
  CHECK(links(8, 0) == std::make_tuple(-1, -1, 4));
  CHECK(links(8, 4) == std::make_tuple(0, 2, 6));
  CHECK(links(8, 2) == std::make_tuple(4, 1, 3));
  CHECK(links(8, 6) == std::make_tuple(4, 5, 7));
  for (int leaf : {1, 3}) CHECK(links(8, leaf) == std::make_tuple(2, -1, -1));
  for (int leaf : {5, 7}) CHECK(links(8, leaf) == std::make_tuple(6, -1, -1));
  // n = 5 (not a power of two): 0 -> 4 -> 2 -> {1, 3}.
  CHECK(links(5, 0) == std::make_tuple(-1, -1, 4));
  CHECK(links(5, 4) == std::make_tuple(0, 2, -1));
  CHECK(links(5, 2) == std::make_tuple(4, 1, 3));
  CHECK(links(1, 0) == std::make_tuple(-1, -1, -1));
}

namespace {
// A well-formed tree over all ranks: one root, at most 3 children each, parent and child
// agree, walking up from every rank reaches the root. Returns the root.
int check_tree(const std::vector<nccl::TreeLinks>& t) {
  const int n = static_cast<int>(t.size());
  int root = -1, roots = 0;
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    int children = 0;
    for (int c : t[r].children) {
      if (c < 0) continue;
      ++children;
      REQUIRE(c < n);
      CHECK(t[c].parent == r);
    }
    CHECK(children <= 3);
    // Children are listed without duplicates.
    std::set<int> distinct;
    for (int c : t[r].children) {
      if (c >= 0) distinct.insert(c);
    }
    CHECK(static_cast<int>(distinct.size()) == children);
    if (t[r].parent < 0) {
      ++roots;
      root = r;
    } else {
      REQUIRE(t[r].parent < n);
      const auto& siblings = t[t[r].parent].children;
      CHECK(std::find(siblings.begin(), siblings.end(), r) != siblings.end());
    }
  }
  CHECK(roots == 1);
  for (int r = 0; r < n; ++r) {
    int x = r, hops = 0;
    while (t[x].parent >= 0 && hops <= n) {
      x = t[x].parent;
      ++hops;
    }
    INFO("rank " << r);
    CHECK(x == root);
  }
  return root;
}
}  // namespace

TEST_CASE("tree_links: the double binary tree over nodes", "[collectives]") {
  for (int k : {2, 3, 4, 5, 6, 8, 16}) {
    const nccl::PlanInput in = layout(k, 1);
    const std::vector<nccl::TreeLinks> t0 = nccl::tree_links(in, 0), t1 = nccl::tree_links(in, 1);
    INFO(k << " nodes");
    {
      INFO("tree 0");
      CHECK(check_tree(t0) == 0);
    }
    {
      INFO("tree 1");
      check_tree(t1);
    }
    // Tree 0 is NCCL's btree over nodes; tree 1 its mirror (even) or its shift by one (odd).
    for (int v = 0; v < k; ++v) {
      const nccl::BtreeLinks b = nccl::btree(k, v);
      CHECK(t0[v].parent == b.up);
      const int m = k % 2 == 0 ? k - 1 - v : (v - 1 + k) % k;
      const nccl::BtreeLinks bm = nccl::btree(k, m);
      const int expected_parent = bm.up < 0 ? -1 : k % 2 == 0 ? k - 1 - bm.up : (bm.up + 1) % k;
      CHECK(t1[v].parent == expected_parent);
    }
    // Even channels use tree 0, odd ones tree 1.
    for (int c = 2; c < 6; ++c) {
      const std::vector<nccl::TreeLinks> tc = nccl::tree_links(in, c);
      const std::vector<nccl::TreeLinks>& same = c % 2 == 0 ? t0 : t1;
      for (int v = 0; v < k; ++v) {
        CHECK(tc[v].parent == same[v].parent);
        CHECK(tc[v].children == same[v].children);
      }
    }
    if (k % 2 == 0) {
      // NCCL's double-binary-tree property: every node is a leaf in at least one tree, so no
      // node's NIC carries interior traffic in both (docs/references.md §3.5).
      for (int v = 0; v < k; ++v) {
        auto leaf = [&](const nccl::TreeLinks& x) {
          return std::all_of(x.children.begin(), x.children.end(), [](int c) { return c < 0; });
        };
        INFO("node " << v);
        CHECK((leaf(t0[v]) || leaf(t1[v])));
      }
      // ... and the two roots differ.
      CHECK(t1[k - 1].parent == -1);
    }
  }
}

TEST_CASE("tree_links: a chain through each node's GPUs under the head", "[collectives]") {
  for (const auto& [nodes, gpus] :
       std::vector<std::pair<int, int>>{{1, 4}, {2, 2}, {2, 8}, {3, 4}, {4, 4}, {8, 2}}) {
    const nccl::PlanInput in = layout(nodes, gpus);
    for (int c = 0; c < 2 * gpus; ++c) {
      INFO(nodes << " nodes x " << gpus << " GPUs, channel " << c);
      const std::vector<nccl::TreeLinks> t = nccl::tree_links(in, c);
      check_tree(t);
      for (int v = 0; v < nodes; ++v) {
        // Exactly one rank of the node (the head) has its parent elsewhere or none; the head is
        // the channel's GPU; every other rank has its parent and children on the same node.
        int heads = 0;
        for (int g = 0; g < gpus; ++g) {
          const int r = v * gpus + g;
          const int p = t[r].parent;
          const bool head = p < 0 || in.rank_node[p] != v;
          heads += head;
          if (head) {
            CHECK(g == c % gpus);
          } else {
            int off_node = 0;
            for (int ch : t[r].children) off_node += ch >= 0 && in.rank_node[ch] != v;
            CHECK(off_node == 0);
            int kids = 0;
            for (int ch : t[r].children) kids += ch >= 0;
            CHECK(kids <= 1);  // a chain
          }
        }
        CHECK(heads == 1);
      }
    }
  }
}

TEST_CASE("make_plan: every op's plan is consistent (messages matched per connection)",
          "[collectives]") {
  for (const Op op : kAllOps) {
    for (const auto& [nodes, gpus] :
         std::vector<std::pair<int, int>>{{1, 2}, {2, 1}, {2, 2}, {3, 2}, {4, 1}, {2, 4}}) {
      for (const int channels : {1, 2, 3}) {
        for (const int64_t bytes : {int64_t{0}, int64_t{8}, int64_t{1000000}, 5 * kMiB + 48}) {
          const int n = nodes * gpus;
          const int64_t b = op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll
                                ? bytes / n * n
                                : bytes;
          INFO(nccl::name(op) << " on " << nodes << "x" << gpus << ", " << channels << " channels, "
                              << b << " B");
          const nccl::Plan p = nccl::make_plan(plan_input(op, nodes, gpus, b, channels));
          check_consistent(p, n);
          if (op == Op::AllReduce) {
            check_consistent(
                nccl::make_plan(plan_input(op, nodes, gpus, b, channels, nccl::Algorithm::Tree)),
                n);
          }
        }
      }
    }
  }
}

TEST_CASE("make_plan: lanes of the wanted ranks only, the same connections", "[collectives]") {
  const nccl::PlanInput in = plan_input(Op::AllReduce, 2, 4, 3 * kMiB, 2, nccl::Algorithm::Tree);
  const nccl::Plan whole = nccl::make_plan(in);
  size_t lanes = 0;
  for (int node = 0; node < 2; ++node) {
    const nccl::Plan part = nccl::make_plan(in, [&](int r) { return in.rank_node[r] == node; });
    CHECK(part.connections.size() == whole.connections.size());
    for (const nccl::Lane& l : part.lanes) CHECK(in.rank_node[l.rank] == node);
    lanes += part.lanes.size();
  }
  CHECK(lanes == whole.lanes.size());
  CHECK(nccl::make_plan(in, [](int) { return false; }).lanes.empty());
}

TEST_CASE("make_plan: ring all-reduce moves 2(n-1)/n of the buffer per rank", "[collectives]") {
  struct Case {
    int nodes, gpus, channels;
    int64_t bytes;
  };
  for (const Case& k : std::vector<Case>{{4, 1, 2, 64 * kMiB},
                                         {3, 1, 2, 1000000},
                                         {3, 1, 2, 13 * kMiB + 12345},
                                         {2, 4, 4, 100 * kMiB + 7},
                                         {5, 1, 3, 777777}}) {
    const int n = k.nodes * k.gpus;
    const nccl::Plan p =
        nccl::make_plan(plan_input(Op::AllReduce, k.nodes, k.gpus, k.bytes, k.channels));
    INFO(n << " ranks, " << k.channels << " channels, " << k.bytes << " B");
    const double ideal = 2.0 * (n - 1) / n * static_cast<double>(k.bytes);
    // Each chunk of a loop is at most one 512 B grain above the even share; only the last loop
    // is cut unevenly, so a rank's two skipped chunks per channel can miss the even share by at
    // most the whole loop's rounding.
    const double bound = static_cast<double>((n + 2) * k.channels * kGrain);
    const std::map<int, int64_t> sent = sent_by_rank(p), received = received_by_rank(p);
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      INFO("rank " << r << " sends " << sent.at(r) << " B, ideal " << ideal);
      CHECK(std::abs(static_cast<double>(sent.at(r)) - ideal) <= bound);
      CHECK(std::abs(static_cast<double>(received.at(r)) - ideal) <= bound);
      total += sent.at(r);
    }
    CHECK(total == 2 * int64_t{n - 1} * k.bytes);  // exact: 2(n-1) copies of every byte
    for (const nccl::Connection& c : p.connections) CHECK(c.slots == 4);
    for (const nccl::Lane& l : p.lanes) {
      CHECK(l.share == 1.0);
      for (const nccl::Unit& u : l.units) CHECK(u.bytes <= 1 * kMiB);  // 4 MiB / 8 steps x 2
    }
  }
  // 64 MiB on 4 ranks and 2 channels: 4 loops of 2 MiB chunks, 1 MiB slices; per channel and
  // loop each rank runs 2n-1 primitives of 2 slices, 2(n-1) of them sending.
  const nccl::Plan p = nccl::make_plan(plan_input(Op::AllReduce, 4, 1, 64 * kMiB, 2));
  CHECK(p.lanes.size() == 8);
  CHECK(p.connections.size() == 8);
  for (const auto& [rank, v] : sent_by_rank(p)) CHECK(v == 96 * kMiB);
  for (const nccl::Lane& l : p.lanes) {
    INFO("rank " << l.rank << " channel " << l.channel);
    int sends = 0;
    for (const nccl::Unit& u : l.units) {
      sends += u.send[0] >= 0;
      CHECK(u.bytes == 1 * kMiB);
    }
    CHECK(l.units.size() == 4 * 7 * 2);
    CHECK(sends == 4 * 2 * 3 * 2);
    CHECK(l.units.back().step == 4 * 7 - 1);
  }
}

TEST_CASE("make_plan: all-gather and reduce-scatter move (n-1)/n of the buffer per rank",
          "[collectives]") {
  for (const Op op : {Op::AllGather, Op::ReduceScatter}) {
    for (const auto& [n, channels, bytes] : std::vector<std::tuple<int, int, int64_t>>{
             {4, 2, 64 * kMiB}, {3, 2, 3 * 1000000}, {5, 3, 5 * (7 * kMiB + 333)}, {2, 1, 2}}) {
      INFO(nccl::name(op) << ", " << n << " ranks, " << channels << " channels, " << bytes << " B");
      const nccl::Plan p = nccl::make_plan(plan_input(op, n, 1, bytes, channels));
      const std::map<int, int64_t> sent = sent_by_rank(p), received = received_by_rank(p);
      for (int r = 0; r < n; ++r) {
        INFO("rank " << r);
        CHECK(sent.at(r) == (n - 1) * (bytes / n));
        CHECK(received.at(r) == (n - 1) * (bytes / n));
      }
      for (const nccl::Connection& c : p.connections) CHECK(c.slots == 4);
      for (const nccl::Lane& l : p.lanes) {
        for (const nccl::Unit& u : l.units) CHECK(u.bytes <= 1 * kMiB);
      }
    }
  }
}

TEST_CASE("make_plan: broadcast and reduce are chains from / to the root", "[collectives]") {
  for (const int root : {0, 2, 3}) {
    for (const int64_t bytes : {int64_t{1000000}, 9 * kMiB + 100, int64_t{8}}) {
      INFO("root " << root << ", " << bytes << " B");
      const nccl::PlanInput in =
          plan_input(Op::Broadcast, 4, 1, bytes, 2, nccl::Algorithm::Ring, root);
      const nccl::Plan b = nccl::make_plan(in);
      const std::map<int, int64_t> sent = sent_by_rank(b), received = received_by_rank(b);
      const int last = (root + 3) % 4;  // the ring 0..3 rotated to start at the root
      CHECK(sent.at(root) == bytes);
      CHECK_FALSE(received.count(root));
      CHECK_FALSE(sent.count(last));
      for (int r = 0; r < 4; ++r) {
        if (r != root) CHECK(received.at(r) == bytes);
        if (r != last) CHECK(sent.at(r) == bytes);
      }
      // Per channel, the root sends that channel's share of the buffer.
      std::map<int, int64_t> root_per_channel;
      for (const nccl::Lane& l : b.lanes) {
        if (l.rank != root) continue;
        for (const nccl::Unit& u : l.units) {
          CHECK(u.bytes <= 512 * kKiB);  // one buffer step per chunk
          root_per_channel[l.channel] += u.bytes;
        }
      }
      if (bytes >= 2 * kGrain) {
        CHECK(root_per_channel[0] > 0);
        CHECK(root_per_channel[1] > 0);
        CHECK(std::abs(root_per_channel[0] - root_per_channel[1]) <= 512 * kKiB);
      }
      for (const nccl::Connection& c : b.connections) CHECK(c.slots == 8);

      nccl::PlanInput rin = in;
      rin.op = Op::Reduce;
      const nccl::Plan r = nccl::make_plan(rin);
      const std::map<int, int64_t> rsent = sent_by_rank(r), rreceived = received_by_rank(r);
      const int first = (root + 1) % 4;
      CHECK(rreceived.at(root) == bytes);
      CHECK_FALSE(rsent.count(root));
      CHECK_FALSE(rreceived.count(first));
      for (const nccl::Connection& c : r.connections) CHECK(c.slots == 8);
    }
  }
}

TEST_CASE("make_plan: tree all-reduce lanes, shares and bytes", "[collectives]") {
  for (const auto& [nodes, gpus] :
       std::vector<std::pair<int, int>>{{4, 1}, {8, 1}, {2, 4}, {3, 2}}) {
    const int n = nodes * gpus;
    const int64_t bytes = 3 * kMiB + 1000;
    const nccl::PlanInput in =
        plan_input(Op::AllReduce, nodes, gpus, bytes, 2, nccl::Algorithm::Tree);
    const nccl::Plan p = nccl::make_plan(in);
    INFO(nodes << " nodes x " << gpus << " GPUs");
    for (const nccl::Connection& c : p.connections) CHECK(c.slots == 8);
    int64_t all_channels = 0;
    for (int c = 0; c < 2; ++c) {
      INFO("channel " << c);
      const std::vector<nccl::TreeLinks> t = nccl::tree_links(in, c);
      std::map<int, std::vector<const nccl::Lane*>> lanes;
      for (const nccl::Lane& l : p.lanes) {
        if (l.channel == c) lanes[l.rank].push_back(&l);
      }
      int64_t share = -1;  // this channel's bytes, from the root's pass
      for (int r = 0; r < n; ++r) {
        INFO("rank " << r);
        REQUIRE(lanes.count(r));
        if (t[r].parent < 0) {
          REQUIRE(lanes[r].size() == 1);
          CHECK(lanes[r][0]->share == 1.0);
          share = 0;
          for (const nccl::Unit& u : lanes[r][0]->units) share += u.bytes;
        } else {
          REQUIRE(lanes[r].size() == 2);
          for (const nccl::Lane* l : lanes[r]) CHECK(l->share == 0.5);
        }
      }
      REQUIRE(share > 0);
      all_channels += share;
      const auto between = sent_between(p);
      for (int r = 0; r < n; ++r) {
        INFO("rank " << r);
        for (int child : t[r].children) {
          if (child < 0) continue;
          // Over both channels the pair may appear in both trees; per channel, count units.
          int64_t down = 0, up = 0;
          for (const nccl::Lane& l : p.lanes) {
            if (l.channel != c) continue;
            for (const nccl::Unit& u : l.units) {
              for (int32_t k : u.send) {
                if (k < 0) continue;
                const nccl::Connection& cn = p.connections[k];
                if (cn.src == r && cn.dst == child) down += u.bytes;
                if (cn.src == child && cn.dst == r) up += u.bytes;
              }
            }
          }
          CHECK(down == share);
          CHECK(up == share);
        }
      }
    }
    CHECK(all_channels == bytes);
  }
}

TEST_CASE("make_plan: all-to-all sends S/n to every other rank in p2p chunks", "[collectives]") {
  for (const int64_t per_peer : {int64_t{300000}, int64_t{600000}, int64_t{4}, 2 * kMiB}) {
    const int n = 8;
    const int64_t bytes = per_peer * n;
    for (const int channels : {1, 2, 4}) {
      INFO(per_peer << " B per peer, " << channels << " channels");
      const nccl::PlanInput in = plan_input(Op::AllToAll, 2, 4, bytes, channels);
      const nccl::Plan p = nccl::make_plan(in);
      const auto between = sent_between(p);
      for (int a = 0; a < n; ++a) {
        for (int b = 0; b < n; ++b) {
          INFO(a << " -> " << b);
          if (a == b) {
            CHECK_FALSE(between.count({a, b}));
          } else {
            CHECK(between.count({a, b}));
            if (between.count({a, b})) CHECK(between.at({a, b}) == per_peer);
          }
        }
      }
      for (const nccl::Connection& c : p.connections) CHECK(c.slots == 8);
      std::map<std::pair<int, int>, int> messages;
      for (const nccl::Lane& l : p.lanes) {
        for (const nccl::Unit& u : l.units) {
          for (int32_t k : u.send) {
            if (k < 0) continue;
            const nccl::Connection& cn = p.connections[k];
            const bool same_node = in.rank_node[cn.src] == in.rank_node[cn.dst];
            CHECK(u.bytes <= (same_node ? 512 * kKiB : 128 * kKiB));
            ++messages[{cn.src, cn.dst}];
          }
        }
      }
      for (const auto& [pair, count] : messages) {
        const bool same_node = in.rank_node[pair.first] == in.rank_node[pair.second];
        const int64_t piece = same_node ? 512 * kKiB : 128 * kKiB;
        CHECK(count == std::max<int64_t>(1, (per_peer + piece - 1) / piece));
      }
    }
  }
}

TEST_CASE("make_plan: send/receive sends S from rank r to rank r+1", "[collectives]") {
  for (const auto& [nodes, gpus] : std::vector<std::pair<int, int>>{{2, 1}, {2, 2}, {3, 1}}) {
    for (const int channels : {1, 3}) {
      for (const int64_t bytes : {int64_t{8}, int64_t{1000003}, 4 * kMiB}) {
        const int n = nodes * gpus;
        INFO(nodes << "x" << gpus << ", " << channels << " channels, " << bytes << " B");
        const nccl::Plan p =
            nccl::make_plan(plan_input(Op::SendRecv, nodes, gpus, bytes, channels));
        const auto between = sent_between(p);
        CHECK(static_cast<int>(between.size()) == n);
        for (int r = 0; r < n; ++r) {
          INFO("rank " << r);
          CHECK(between.count({r, (r + 1) % n}));
          if (between.count({r, (r + 1) % n})) CHECK(between.at({r, (r + 1) % n}) == bytes);
        }
      }
    }
  }
}

TEST_CASE("bus_factor and element_count follow nccl-tests", "[collectives]") {
  for (int n : {1, 2, 3, 4, 8, 16, 64}) {
    INFO(n << " ranks");
    const double d = n;
    CHECK(nccl::bus_factor(Op::AllReduce, n) == 2 * (d - 1) / d);
    CHECK(nccl::bus_factor(Op::AllGather, n) == (d - 1) / d);
    CHECK(nccl::bus_factor(Op::ReduceScatter, n) == (d - 1) / d);
    CHECK(nccl::bus_factor(Op::AllToAll, n) == (d - 1) / d);
    CHECK(nccl::bus_factor(Op::Broadcast, n) == 1.0);
    CHECK(nccl::bus_factor(Op::Reduce, n) == 1.0);
    CHECK(nccl::bus_factor(Op::SendRecv, n) == 1.0);
  }
  // count: per-rank elements; AG/RS/all-to-all sizes hold all n ranks' parts.
  CHECK(nccl::element_count(Op::AllReduce, 1 * kMiB, 4, 8) == 262144);
  CHECK(nccl::element_count(Op::Broadcast, 1 * kMiB, 4, 8) == 262144);
  CHECK(nccl::element_count(Op::Reduce, 1 * kMiB, 2, 8) == 524288);
  CHECK(nccl::element_count(Op::SendRecv, 1 * kMiB, 8, 8) == 131072);
  CHECK(nccl::element_count(Op::AllGather, 1 * kMiB, 4, 8) == 32768);
  CHECK(nccl::element_count(Op::ReduceScatter, 1 * kMiB, 4, 8) == 32768);
  CHECK(nccl::element_count(Op::AllToAll, 1 * kMiB, 4, 8) == 32768);
  CHECK(nccl::element_count(Op::AllGather, 8, 4, 4) == 0);
  CHECK(nccl::element_count(Op::AllReduce, 7, 4, 4) == 1);
}

// =============================================================================================
// B. Runs

TEST_CASE("every collective op runs on 2 nodes x 2 GPUs: nccl-tests rows", "[collectives]") {
  for (const Op op : kAllOps) {
    const std::string name = nccl::name(op);
    const bool rooted = op == Op::Broadcast || op == Op::Reduce;
    nlohmann::json gen = {{"type", "collective"}, {"op", name}, {"size", "1MiB"}};
    if (rooted) gen["root"] = 1;
    const nlohmann::json scenario = rail(2, 2, gen);
    Fabric fabric(document(scenario), 1);
    const RunResult r = fabric.run();
    INFO(name);
    REQUIRE(r.collectives.size() == 1);
    const CollectiveRow& row = r.collectives[0];
    CHECK(row.op == name);
    CHECK(row.size == 1 * kMiB);
    CHECK(row.ranks == 4);
    CHECK(row.gpus == std::vector<uint32_t>{0, 1, 2, 3});
    CHECK(row.iterations == 1);
    CHECK(row.count == nccl::element_count(op, 1 * kMiB, 4, 4));
    CHECK(row.count ==
          (op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll ? 65536 : 262144));
    CHECK(row.root == (rooted ? 1 : -1));
    CHECK(row.algorithm ==
          (op == Op::AllToAll || op == Op::SendRecv ? std::string("p2p") : std::string("ring")));
    CHECK(row.time_us > 0);
    CHECK(row.time_us >= 8.4);  // at least the launch latency
    CHECK(row.end > row.start);
    CHECK(close(row.algbw, static_cast<double>(row.size) / (row.time_us * 1e3), 1e-12));
    CHECK(close(row.busbw, row.algbw * nccl::bus_factor(op, 4), 1e-12));
    check_timeline(fabric, r);
    check_runs_whole_plan(fabric, r);
    CHECK_FALSE(r.reached_end);
  }
}

TEST_CASE("a collective's first slice starts exactly one launch latency in", "[collectives]") {
  for (const std::string base : {"8.4us", "20us"}) {
    nlohmann::json scenario = rail(2, 1,
                                   {{"type", "collective"},
                                    {"op", "all_reduce"},
                                    {"size", "64KiB"},
                                    {"algorithm", "ring"},
                                    {"start", "5us"}});
    scenario["nccl"] = {{"base_latency", base}};
    Fabric fabric(document(scenario), 1);
    const RunResult r = fabric.run();
    REQUIRE(r.collectives.size() == 1);
    const Time latency = parse_time(base);
    CHECK(fabric.collectives().nccl.base_latency == latency);
    CHECK(r.collectives[0].start == Time{5'000'000});
    Time first = Time::max();
    for (const CollectiveStepRecord& s : r.collective_steps) first = std::min(first, s.start);
    CHECK(first == Time{5'000'000} + latency);
    check_timeline(fabric, r);
  }
}

TEST_CASE("per-algorithm step latencies: auto is the generic one, point-to-point keeps it",
          "[collectives][step_latency]") {
  nlohmann::json scenario =
      rail(2, 2,
           {{"type", "collective"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"size", "1MiB"}});
  scenario["traffic"].push_back(
      {{"type", "collective"}, {"op", "all_reduce"}, {"algorithm", "tree"}, {"size", "1MiB"}});
  scenario["traffic"].push_back({{"type", "collective"}, {"op", "all_to_all"}, {"size", "1MiB"}});
  const auto ops_of = [](const nlohmann::json& s) {
    return Fabric(document(s), 1).collectives().ops;
  };
  const std::vector<CollectiveOp> plain = ops_of(scenario);
  REQUIRE(plain.size() == 3);
  for (const CollectiveOp& op : plain) {
    CHECK(op.net_step_latency == microseconds(11));
    CHECK(op.nvlink_step_latency == nanoseconds(3400));
  }
  scenario["nccl"] = {{"net_step_latency", "12us"},
                      {"tree_net_step_latency", "20us"},
                      {"ring_nvlink_step_latency", "2us"},
                      {"tree_nvlink_step_latency", "auto"}};
  const std::vector<CollectiveOp> set = ops_of(scenario);
  CHECK(set[0].net_step_latency == microseconds(12));  // ring: the generic one
  CHECK(set[0].nvlink_step_latency == microseconds(2));
  CHECK(set[1].net_step_latency == microseconds(20));  // tree
  CHECK(set[1].nvlink_step_latency == nanoseconds(3400));
  CHECK(set[2].net_step_latency == microseconds(12));  // all-to-all: point-to-point
  CHECK(set[2].nvlink_step_latency == nanoseconds(3400));

  scenario["nccl"] = {{"tree_net_step_latency", "-1us"}};
  CHECK_THROWS_WITH(ops_of(scenario), Catch::Contains("nccl.tree_net_step_latency"));
  scenario["nccl"] = {{"ring_nvlink_step_latency", "soon"}};
  CHECK_THROWS_WITH(ops_of(scenario), Catch::Contains("nccl.ring_nvlink_step_latency"));
}

TEST_CASE("a ring's own step latency lengthens each of its network steps by the difference",
          "[collectives][step_latency]") {
  // Two ranks on two nodes: a small ring all-reduce is 2 (n - 1) = 2 network steps in a row.
  nlohmann::json scenario =
      rail(2, 1,
           {{"type", "collective"}, {"op", "all_reduce"}, {"algorithm", "ring"}, {"size", "4KiB"}});
  const auto time_of = [&](const nlohmann::json& nccl) {
    scenario["nccl"] = nccl;
    const RunResult r = run(scenario);
    REQUIRE(r.collectives.size() == 1);
    return std::make_pair(r.collectives[0].end - r.collectives[0].start, r.fingerprint);
  };
  const auto plain = time_of(nlohmann::json::object());
  CHECK(time_of({{"ring_net_step_latency", "11us"}}) == plain);  // the generic value
  CHECK(time_of({{"tree_net_step_latency", "30us"}}) == plain);  // not a tree
  CHECK(time_of({{"ring_net_step_latency", "16us"}}).first - plain.first == microseconds(10));
}

TEST_CASE("a size sweep: nccl-tests sizes in order, times growing with size", "[collectives]") {
  const nlohmann::json scenario = rail(2, 2,
                                       {{"type", "collective"},
                                        {"op", "all_reduce"},
                                        {"algorithm", "ring"},
                                        {"min_bytes", "8B"},
                                        {"max_bytes", "1MiB"},
                                        {"step_factor", 4}});
  Fabric fabric(document(scenario), 1);
  const RunResult r = fabric.run();
  const std::vector<int64_t> expected{8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288};
  REQUIRE(r.collectives.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const CollectiveRow& row = r.collectives[i];
    INFO("row " << i << ": " << row.size << " B, " << row.time_us << " us");
    CHECK(row.size == expected[i]);
    CHECK(row.count == expected[i] / 4);
    CHECK(row.time_us > 0);
    CHECK(close(row.busbw, row.algbw * 1.5, 1e-12));
    if (i > 0) {
      CHECK(row.time_us >= r.collectives[i - 1].time_us);
      CHECK(row.start >= r.collectives[i - 1].end);  // sizes run one after another
    }
  }
  check_timeline(fabric, r);
  check_runs_whole_plan(fabric, r);
}

TEST_CASE("collective runs are identical for 1, 2 and 4 threads", "[collectives]") {
  for (const nlohmann::json& gen :
       {nlohmann::json{{"type", "collective"},
                       {"op", "all_reduce"},
                       {"algorithm", "ring"},
                       {"min_bytes", "4KiB"},
                       {"max_bytes", "1MiB"},
                       {"step_factor", 16},
                       {"iterations", 2},
                       {"warmup_iterations", 1}},
        nlohmann::json{{"type", "collective"},
                       {"op", "all_reduce"},
                       {"algorithm", "tree"},
                       {"size", "512KiB"}},
        nlohmann::json{{"type", "collective"}, {"op", "all_to_all"}, {"size", "1MiB"}}}) {
    // Each NIC with its rail, windows of PCIe's latency (0.5 us) or the links' delay (1 us,
    // below PCIe's 2 us). A PCIe latency below kLocalityWindow (20 ns): each GPU node with its
    // NICs, windows of the links' 1 us. Without one: a node's NICs must go together. Bursts take
    // the shorter of PCIe's latency and the links' delay where it is at least 50 ns.
    for (const auto& [pcie, together, window, burst] :
         {std::tuple{"0.5us", false, Time{500'000}, Time{500'000}},
          std::tuple{"2us", false, Time{1'000'000}, Time{1'000'000}},
          std::tuple{"20ns", true, Time{1'000'000}, Time{}},
          std::tuple{"0us", true, Time{1'000'000}, Time{}}}) {
      nlohmann::json scenario = rail(2, 2, gen);
      scenario["gpu"] = {{"pcie_latency", pcie}};
      const RunResult one = run(scenario, 1);
      REQUIRE_FALSE(one.collectives.empty());
      auto check_same = [&](const RunResult& other) {
        CHECK(other.fingerprint == one.fingerprint);
        REQUIRE(other.collectives.size() == one.collectives.size());
        for (size_t i = 0; i < one.collectives.size(); ++i) {
          CHECK(row_of(other.collectives[i]) == row_of(one.collectives[i]));
          CHECK(other.collectives[i].time_us == one.collectives[i].time_us);
        }
        CHECK(steps_of(other) == steps_of(one));
        CHECK(transfers_of(other) == transfers_of(one));
      };
      INFO(gen.dump() << ", PCIe latency " << pcie);
      CHECK(one.burst_window == burst);
      nlohmann::json plain = scenario;
      plain["run"]["bursts"] = false;
      const RunResult serial = run(plain, 1);
      CHECK(serial.burst_window == Time{});
      check_same(serial);
      for (const int threads : {2, 4}) {
        const RunResult many = run(scenario, threads);
        INFO(threads << " threads (" << many.partitions << " partitions)");
        CHECK(many.partitions > 1);
        CHECK(many.node_nics_together == together);
        CHECK(many.window == window);
        check_same(many);
      }
    }
  }
}

TEST_CASE("a 64 MiB ring all-reduce on 4 nodes runs at the RoCE goodput", "[collectives]") {
  const int64_t size = 64 * kMiB;
  const nlohmann::json scenario = rail(
      4, 1,
      {{"type", "collective"}, {"op", "all_reduce"}, {"size", "64MiB"}, {"algorithm", "ring"}});
  const RunResult r = run(scenario);
  REQUIRE(r.collectives.size() == 1);
  const CollectiveRow& row = r.collectives[0];
  const double per_rank = 2.0 * 3 / 4 * static_cast<double>(size);  // bytes each NIC sends
  // RoCE goodput with a 4 KiB MTU: 4096 B of payload per 4096 + 62 B headers + 20 B preamble
  // and gap on the wire.
  const double goodput = 100e9 * 4096 / (4096 + 82) / 8;
  const double ratio = row.time_us / (per_rank / goodput * 1e6);
  // In a ring each NIC also ACKs its predecessor on the same egress link: with nic.ack_every 1
  // an 86 B ACK frame (62 + 4 B AETH + 20 B) per data frame.
  const double goodput_with_acks = 100e9 * 4096 / (4096 + 82 + 86) / 8;
  const double ratio_with_acks = row.time_us / (per_rank / goodput_with_acks * 1e6);
  double busy_us = 0;  // NIC egress busy time, the largest over the four NICs
  for (const PortRecord& p : r.ports) {
    if (!p.switch_port) busy_us = std::max(busy_us, static_cast<double>(p.busy_time.ps) / 1e6);
  }
  INFO("64 MiB ring all-reduce, 4 nodes x 1 GPU, 100 Gb/s: "
       << row.time_us << " us; 2(n-1)/n S / B = " << per_rank / goodput * 1e6 << " us, ratio "
       << ratio << "; with the ACK frames on the egress, ratio " << ratio_with_acks
       << "; NIC egress busy " << busy_us / row.time_us << " of the time; busbw " << row.busbw
       << " GB/s");
  CHECK(ratio >= 1.0);
  CHECK(ratio_with_acks >= 1.0);
  CHECK(ratio_with_acks <= 1.05);
  CHECK(ratio <= 1.06);
  CHECK(busy_us >= 0.95 * row.time_us);
}

TEST_CASE("without GPUDirect: slower at large sizes, later at small ones", "[collectives]") {
  auto time_us = [](const std::string& size, bool gpudirect) {
    nlohmann::json scenario =
        rail(2, 1,
             {{"type", "collective"}, {"op", "all_reduce"}, {"size", size}, {"algorithm", "ring"}});
    scenario["gpu"] = {{"gpudirect", gpudirect}, {"pcie_rate", "100Gbps"}};
    const RunResult r = run(scenario);
    REQUIRE(r.collectives.size() == 1);
    return r.collectives[0].time_us;
  };
  const double big_gdr = time_us("8MiB", true), big_bounce = time_us("8MiB", false);
  const double small_gdr = time_us("8B", true), small_bounce = time_us("8B", false);
  INFO("gpudirect on/off, 2 nodes, PCIe 100 Gb/s: 8 MiB "
       << big_gdr << " / " << big_bounce << " us; 8 B " << small_gdr << " / " << small_bounce
       << " us");
  // Off, every byte crosses PCIe twice: half the rate, so the bandwidth-bound time nearly
  // doubles.
  CHECK(big_bounce > 1.6 * big_gdr);
  // Two ranks: two network messages one after the other, each bounce_latency (5 us) later.
  CHECK(small_bounce - small_gdr >= 2 * 5.0 - 1e-6);
  CHECK(small_bounce - small_gdr <= 2 * 5.0 + 1.0);
}

TEST_CASE("tree beats ring for small all-reduces on 8 nodes, ring wins large ones",
          "[collectives]") {
  auto time_us = [](const std::string& size, const std::string& algorithm) {
    const RunResult r = run(rail(
        8, 1,
        {{"type", "collective"}, {"op", "all_reduce"}, {"size", size}, {"algorithm", algorithm}}));
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].algorithm == algorithm);
    return r.collectives[0].time_us;
  };
  const double tree_small = time_us("8B", "tree"), ring_small = time_us("8B", "ring");
  const double tree_big = time_us("256MiB", "tree"), ring_big = time_us("256MiB", "ring");
  INFO("8 nodes x 1 GPU: 8 B tree " << tree_small << " us, ring " << ring_small
                                    << " us; 256 MiB tree " << tree_big << " us, ring " << ring_big
                                    << " us");
  CHECK(tree_small < ring_small);
  CHECK(ring_big < tree_big);
}

TEST_CASE("a collective on one rank completes after the launch latency", "[collectives]") {
  for (const Op op : kAllOps) {
    const RunResult r = run(rail(
        2, 1, {{"type", "collective"}, {"op", nccl::name(op)}, {"size", "1MiB"}, {"ranks", 1}}));
    INFO(nccl::name(op));
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].ranks == 1);
    CHECK(r.collectives[0].time_us >= 8.4);
    CHECK(r.collectives[0].time_us < 100);
  }
}

TEST_CASE("collective scenario errors name the key", "[collectives]") {
  const nlohmann::json ok = rail(2, 2, {{"type", "collective"}, {"op", "all_reduce"}});
  CHECK(scenario_error(ok).empty());

  nlohmann::json tree = ok;
  tree["traffic"][0]["op"] = "all_gather";
  tree["traffic"][0]["algorithm"] = "tree";
  CHECK_THAT(scenario_error(tree), Catch::Contains("traffic[0].algorithm"));

  nlohmann::json count = ok;
  count["traffic"][0]["ranks"] = 5;  // 4 GPUs
  CHECK_THAT(scenario_error(count), Catch::Contains("traffic[0].ranks"));
  nlohmann::json list = ok;
  list["traffic"][0]["ranks"] = {0, 4};
  CHECK_THAT(scenario_error(list), Catch::Contains("traffic[0].ranks[1]"));
  list["traffic"][0]["ranks"] = {1, 1};
  CHECK_THAT(scenario_error(list), Catch::Contains("traffic[0].ranks[1]"));

  nlohmann::json root = ok;
  root["traffic"][0]["op"] = "broadcast";
  root["traffic"][0]["root"] = 4;
  CHECK_THAT(scenario_error(root), Catch::Contains("traffic[0].root"));

  nlohmann::json gpu_only = rail(2, 2, {{"type", "all_to_all"}, {"size", "64KB"}});
  gpu_only["gpu"] = {{"gpudirect", false}};
  CHECK(scenario_error(gpu_only).empty());  // accepted without collective traffic (layering)
  gpu_only["gpu"]["gpudirekt"] = true;
  CHECK_THAT(scenario_error(gpu_only), Catch::Contains("at gpu.gpudirekt:"));
  nlohmann::json nccl_only = rail(2, 2, {{"type", "all_to_all"}, {"size", "64KB"}});
  nccl_only["nccl"] = {{"base_latency", "-5us"}};
  CHECK_THAT(scenario_error(nccl_only), Catch::Contains("at nccl.base_latency:"));

  nlohmann::json channels = ok;
  channels["nccl"] = {{"nchannels", "x"}};
  CHECK_THAT(scenario_error(channels), Catch::Contains("nccl.nchannels"));
  channels["nccl"] = {{"nchannels", 0}};
  CHECK_THAT(scenario_error(channels), Catch::Contains("nccl.nchannels"));

  nlohmann::json unknown = ok;
  unknown["traffic"][0]["algo"] = "ring";
  CHECK_THAT(scenario_error(unknown), Catch::Contains("traffic[0].algo"));

  nlohmann::json both = ok;  // one size and a sweep at once: which did the user mean?
  both["traffic"][0]["size"] = "1MiB";
  both["traffic"][0]["max_bytes"] = "4MiB";
  CHECK_THAT(scenario_error(both),
             Catch::Contains("traffic[0].max_bytes") && Catch::Contains("not both"));

  // A sweep's wrong end is the key blamed.
  nlohmann::json zero = ok;
  zero["traffic"][0].erase("size");
  zero["traffic"][0]["min_bytes"] = "0B";
  CHECK_THAT(scenario_error(zero),
             Catch::Contains("traffic[0].min_bytes") && Catch::Contains("at least 1B"));
  nlohmann::json inverted = ok;
  inverted["traffic"][0].erase("size");
  inverted["traffic"][0]["min_bytes"] = "4MiB";
  inverted["traffic"][0]["max_bytes"] = "1MiB";
  CHECK_THAT(scenario_error(inverted),
             Catch::Contains("traffic[0].max_bytes") && Catch::Contains("at least min_bytes"));
}

TEST_CASE("two collectives at once on disjoint GPUs, ranks in any GPU order", "[collectives]") {
  nlohmann::json scenario = rail(2, 2,
                                 {{"type", "collective"},
                                  {"op", "all_reduce"},
                                  {"size", "2MiB"},
                                  {"ranks", {2, 0}},
                                  {"iterations", 3},
                                  {"warmup_iterations", 1}});
  scenario["traffic"].push_back({{"type", "collective"},
                                 {"op", "all_gather"},
                                 {"size", "2MiB"},
                                 {"ranks", {1, 3}},
                                 {"start", "10us"}});
  Fabric fabric(document(scenario), 1);
  const RunResult r = fabric.run();
  REQUIRE(r.collectives.size() == 2);
  CHECK(r.collectives[0].generator == 0);
  CHECK(r.collectives[0].gpus == std::vector<uint32_t>{2, 0});
  CHECK(r.collectives[0].iterations == 3);
  CHECK(r.collectives[1].generator == 1);
  CHECK(r.collectives[1].gpus == std::vector<uint32_t>{1, 3});
  CHECK(r.collectives[1].start == Time{10'000'000});
  for (const CollectiveRow& row : r.collectives) {
    INFO(row.op);
    CHECK(row.ranks == 2);
    CHECK(row.time_us > 0);
    CHECK(row.algorithm != "auto");
    // Timed iterations run back to back: the span holds all of them (and no more than those
    // plus the slowest rank's lag).
    const double span_us = static_cast<double>((row.end - row.start).ps) / 1e6;
    CHECK(span_us >= row.iterations * row.time_us * 0.99);
    CHECK(span_us <= row.iterations * row.time_us * 1.5);
  }
  // The warm-up iteration of the all-reduce ran before the timed ones, the iterations are
  // numbered 0..3 in the timeline, and none of it is on another generator's row.
  std::set<uint32_t> iterations;
  for (const CollectiveStepRecord& s : r.collective_steps) {
    if (s.row == 0) iterations.insert(s.iteration);
    if (s.row == 0) CHECK((s.rank == 0 || s.rank == 1));
  }
  CHECK(iterations == std::set<uint32_t>{0, 1, 2, 3});
  check_timeline(fabric, r);
  check_runs_whole_plan(fabric, r);
}

TEST_CASE("ring and tree traffic stays on the rails (no bytes through the spine)",
          "[collectives]") {
  for (const auto& [nodes, gpus, algorithm] : std::vector<std::tuple<int, int, std::string>>{
           {2, 2, "ring"}, {4, 2, "ring"}, {2, 2, "tree"}, {4, 2, "tree"}, {3, 2, "tree"}}) {
    const RunResult r = run(rail(nodes, gpus,
                                 {{"type", "collective"},
                                  {"op", "all_reduce"},
                                  {"size", "4MiB"},
                                  {"algorithm", algorithm}}));
    INFO(nodes << " nodes x " << gpus << " GPUs, " << algorithm);
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].time_us > 0);
    int64_t nic_bytes = 0;
    for (const PortRecord& p : r.ports) {
      if (!p.switch_port) nic_bytes += p.tx_bytes();
    }
    CHECK(nic_bytes > 4 * kMiB);
    CHECK(spine_bytes(r) == 0);
  }
}

TEST_CASE("bandwidth-bound collectives stay below the RoCE goodput", "[collectives]") {
  // 16 MiB on 4 nodes x 1 GPU at 100 Gb/s. Broadcast and reduce run 8 iterations: in a single
  // one the rank that only sends finishes as soon as its last slice is handed to the NIC (up to
  // 8 slots per channel still queued there), which, averaged over the ranks, can put one
  // iteration's busbw above the wire's (as NCCL's kernel on the root would).
  const double goodput = 100e9 * 4096 / (4096 + 82) / 8 / 1e9;  // GB/s
  for (const Op op : kAllOps) {
    const bool rooted = op == Op::Broadcast || op == Op::Reduce;
    const RunResult r = run(rail(4, 1,
                                 {{"type", "collective"},
                                  {"op", nccl::name(op)},
                                  {"size", "16MiB"},
                                  {"algorithm", "ring"},
                                  {"iterations", rooted ? 8 : 1}}));
    REQUIRE(r.collectives.size() == 1);
    const double ratio = r.collectives[0].busbw / goodput;
    INFO(nccl::name(op) << ": busbw " << r.collectives[0].busbw << " GB/s, " << ratio
                        << " of the goodput");
    CHECK(ratio < 1.0);
    CHECK(ratio > 0.85);
  }
}

TEST_CASE("collectives on one node, on shared NICs and over several QPs", "[collectives]") {
  SECTION("ranks on one node use NVLink only") {
    Fabric fabric(
        document(rail(
            2, 2,
            {{"type", "collective"}, {"op", "all_reduce"}, {"size", "4MiB"}, {"ranks", {0, 1}}})),
        1);
    const RunResult r = fabric.run();
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].time_us > 0);
    REQUIRE_FALSE(r.collective_transfers.empty());
    for (const CollectiveTransferRecord& t : r.collective_transfers) {
      CHECK(t.transport == CollectiveTransport::NvLink);
    }
    CHECK(r.data_packets_sent == 0);
    check_timeline(fabric, r);
    check_runs_whole_plan(fabric, r);
  }
  SECTION("4 GPUs sharing 2 NICs per node") {
    nlohmann::json scenario =
        rail(2, 4, {{"type", "collective"}, {"op", "all_reduce"}, {"size", "4MiB"}});
    scenario["topology"]["nics_per_node"] = 2;
    Fabric fabric(document(scenario), 1);
    CHECK(fabric.collectives().nccl.channels == 4);  // auto: 2 per NIC
    const RunResult r = fabric.run();
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].time_us > 0);
    check_timeline(fabric, r);
    check_runs_whole_plan(fabric, r);
  }
  SECTION("messages spread over 4 QPs per connection arrive out of order") {
    for (const std::string op : {"all_reduce", "all_to_all", "broadcast"}) {
      nlohmann::json scenario =
          rail(2, 2, {{"type", "collective"}, {"op", op}, {"size", "4MiB"}, {"algorithm", "ring"}});
      scenario["nccl"] = {{"ib_qps_per_connection", 4}};
      Fabric fabric(document(scenario), 1);
      const RunResult r = fabric.run();
      INFO(op);
      REQUIRE(r.collectives.size() == 1);
      CHECK(r.collectives[0].time_us > 0);
      check_timeline(fabric, r);
      check_runs_whole_plan(fabric, r);
    }
  }
}

// NCCL_IB_QPS_PER_CONNECTION gives ECMP entropy: each queue pair has its own UDP source port,
// so one connection's messages spread over the spines that a single queue pair would not.
TEST_CASE("queue pairs per connection spread a connection over the spines", "[collectives]") {
  auto spines_used = [](int qps) {
    // Two GPUs on different nodes and rails: the send/receive pair crosses a spine each way.
    // One channel and one message size, so the queue pairs are the only source of entropy.
    nlohmann::json scenario = rail(
        2, 2, {{"type", "collective"}, {"op", "send_recv"}, {"size", "4MiB"}, {"ranks", {0, 3}}});
    scenario["topology"]["spines"] = 8;
    scenario["nccl"] = {{"ib_qps_per_connection", qps}, {"nchannels", 1}};
    const RunResult r = run(scenario);
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].time_us > 0);
    std::set<std::string> used;
    for (const PortRecord& p : r.ports) {
      if (p.node.rfind("spine", 0) == 0 && p.tx_bytes() > 0) used.insert(p.node);
    }
    return used.size();
  };
  const size_t one = spines_used(1), eight = spines_used(8);
  INFO("spines carrying the connection: 1 QP " << one << ", 8 QPs " << eight);
  CHECK(one <= 4);  // one path each way for the data, one for each direction's ACKs
  CHECK(eight > one);
}

// Each rank's iterations are recorded (warm-up included), and the row's time is the nccl-tests
// average over ranks of (end of the last timed iteration - launch of the first) / iterations.
TEST_CASE("per-iteration records add up to the row's time", "[collectives]") {
  const RunResult r = run(rail(2, 2,
                               {{"type", "collective"},
                                {"op", "all_reduce"},
                                {"min_bytes", "64KiB"},
                                {"max_bytes", "4MiB"},
                                {"step_factor", 8},
                                {"warmup_iterations", 1},
                                {"iterations", 2}}));
  REQUIRE(r.collectives.size() == 3);
  REQUIRE(r.collective_iterations.size() == 3 * 3 * 4);  // sizes x iterations x ranks
  for (uint32_t row = 0; row < 3; ++row) {
    double sum_us = 0;
    for (uint32_t rank = 0; rank < 4; ++rank) {
      Time first = Time::max(), last{};
      Time previous_end{};
      for (const CollectiveIterationRecord& it : r.collective_iterations) {
        if (it.row != row || it.rank != rank) continue;
        CHECK(it.end > it.start);
        CHECK(it.start >= previous_end);  // back to back on the rank's stream
        previous_end = it.end;
        if (it.iteration == 0) continue;  // warm-up
        first = std::min(first, it.start);
        last = std::max(last, it.end);
      }
      sum_us += static_cast<double>((last - first).ps) / 1e6;
    }
    INFO("row " << row);
    CHECK(r.collectives[row].time_us == Approx(sum_us / 4 / 2).epsilon(1e-12));
  }
}

// On a lossy class, packets of the collective's connections are dropped beside an incast: the
// NIC recovers them go-back-N (NAKs and timeouts acknowledge whole messages too) and every
// rank still finishes, identically on one and two threads.
TEST_CASE("a collective on a lossy class recovers from drops", "[collectives]") {
  nlohmann::json scenario = rail(8, 1,
                                 {{"type", "collective"},
                                  {"op", "all_reduce"},
                                  {"size", "16MiB"},
                                  {"algorithm", "ring"},
                                  {"dscp", 0}});
  scenario["traffic"].push_back(
      {{"type", "incast"}, {"receiver", 1}, {"size", "2MB"}, {"dscp", 0}});
  scenario["fabric"]["pfc"] = {{"enabled", false}};
  scenario["fabric"]["switch"] = {{"buffer", "400KB"}};
  scenario["nic"] = {{"ack_timeout", "50us"}};
  const RunResult one = run(scenario, 1), two = run(scenario, 2);
  int64_t drops = 0;
  for (const PortRecord& p : one.ports) drops += p.drops();
  CHECK(drops > 0);
  REQUIRE(one.collectives.size() == 1);
  CHECK(one.collectives[0].time_us > 0);  // every rank finished
  CHECK_FALSE(one.reached_end);
  CHECK(one.fingerprint == two.fingerprint);
  CHECK(one.collectives[0].time_us == two.collectives[0].time_us);
}
