// NCCL's tuning model against the numbers docs/references.md section 3.3 works out by hand and
// against the model's formulas re-derived here, independently of the implementation.
#include <cmath>
#include <cstdint>

#include "models/collectives/nccl_tuning.h"
#include "test_support.h"

using namespace fabtwin::nccl;

namespace {
TuningInput all_reduce(int ranks, int nodes, int channels, double bw_intra, double bw_inter) {
  TuningInput in;
  in.op = Collective::AllReduce;
  in.ranks = ranks;
  in.nodes = nodes;
  in.channels = channels;
  in.bw_intra = bw_intra;
  in.bw_inter = bw_inter;
  return in;
}

// Latency as the time formula sees it: time minus the bandwidth term, so it includes the ring
// plateau factor. Only for algorithms with no bandwidth correction at this size.
double effective_latency(const TuningInput& in, Algorithm a, Protocol p) {
  const Estimate e = estimate(in, a, p);
  REQUIRE(e.enabled);
  return e.time_us - static_cast<double>(in.bytes) / (1000.0 * e.bandwidth);
}

constexpr int64_t kGiB = int64_t{1} << 30;

// Hopper, Intel, AllReduce, Simple, latencyInter 0, NVLink inside the node: the model written
// out again from docs/references.md §3.3.
double tree_correction_simple(int64_t bytes) {
  static const double f[24] = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
                               .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9};
  if (bytes < 64) return 1.0;
  const int l = static_cast<int>(std::floor(std::log2(static_cast<double>(bytes / 64))));
  return l < 24 ? f[l] : 1.0;
}
double ref_ring_time(const TuningInput& in, int64_t bytes) {
  const int n = in.ranks, nodes = in.nodes;
  const double bw = (nodes <= 2 ? in.bw_intra : in.bw_inter) * in.channels * n / (2.0 * (n - 1));
  const double net_overhead = nodes > 1 ? 3.0 : 0.0;
  const double intra = std::max(3.4, net_overhead);
  const double inter = 14.0;  // NET Ring Simple and NET Tree Simple are both 14
  const int inter_steps = nodes > 1 ? 2 * (nodes - 1) : 0;
  double lat = 8.4 + (2 * (n - 1) - inter_steps) * intra + inter_steps * inter;
  if (nodes > 1 && bytes / (in.channels * n) >= 64) lat *= 1.4;
  return lat + bytes / (1000.0 * bw);
}
double ref_tree_time(const TuningInput& in, int64_t bytes) {
  const int n = in.ranks, nodes = in.nodes;
  const int col = nodes <= 2 ? nodes - 1 : 2;
  const double tree_cap[3] = {38.7, 41.4, 36.0};  // Hopper perChMaxTreeBws
  const double bus = (nodes <= 2 ? in.bw_intra : in.bw_inter) * in.channels;
  const double bw = std::min(0.92 * bus, in.channels * tree_cap[col]) * 0.5;
  const double lat =
      8.4 + 2 * ((n / nodes - 1) * 4.0 + std::floor(std::log2(static_cast<double>(nodes))) * 14.0);
  return lat + bytes / (1000.0 * bw * tree_correction_simple(bytes));
}
}  // namespace

TEST_CASE("names and version", "[nccl_tuning]") {
  CHECK(std::string(kTuningVersion) == "2.30.7");
  CHECK(std::string(name(Algorithm::Tree)) == "tree");
  CHECK(std::string(name(Algorithm::Ring)) == "ring");
  CHECK(std::string(name(Protocol::LL)) == "LL");
  CHECK(std::string(name(Protocol::LL128)) == "LL128");
  CHECK(std::string(name(Protocol::Simple)) == "Simple");
}

TEST_CASE("ring all-reduce latency reproduces the worked table of docs/references.md §3.3",
          "[nccl_tuning]") {
  // Intel host, latencyInter = 0, large message, NVLink inside the node, Hopper.
  struct Row {
    int ranks, nodes;
    double ll, ll128, simple;
  };
  const Row rows[] = {
      {8, 1, 15.0, 40.6, 56.0}, {16, 2, 40.0, 75.2, 184.2}, {64, 8, 156.4, 282.8, 819.3}};
  for (const Row& r : rows) {
    TuningInput in = all_reduce(r.ranks, r.nodes, 16, 20.6, 12.0);
    in.bytes = kGiB;
    INFO(r.ranks << " ranks, " << r.nodes << " nodes");
    CHECK(effective_latency(in, Algorithm::Ring, Protocol::LL) == Approx(r.ll).margin(0.05));
    CHECK(effective_latency(in, Algorithm::Ring, Protocol::LL128) == Approx(r.ll128).margin(0.05));
    CHECK(effective_latency(in, Algorithm::Ring, Protocol::Simple) ==
          Approx(r.simple).margin(0.05));
  }
  // The x1.4 plateau factor is applied in the time, not in the stored latency.
  TuningInput in = all_reduce(16, 2, 16, 20.6, 12.0);
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us == Approx(131.6));
  // ... and only once each rank sends at least 64 B per channel: 16 ch x 16 ranks x 64 B.
  in.bytes = 16 * 16 * 64 - 1;
  CHECK(effective_latency(in, Algorithm::Ring, Protocol::Simple) == Approx(131.6));
  in.bytes = 16 * 16 * 64;
  CHECK(effective_latency(in, Algorithm::Ring, Protocol::Simple) == Approx(131.6 * 1.4));
  // Before Ampere the factor is 1.9.
  in.compute_capability = 70;
  CHECK(effective_latency(in, Algorithm::Ring, Protocol::Simple) == Approx(131.6 * 1.9));
}

TEST_CASE("latency: tree, one rank per node, AMD, latencyInter, other collectives",
          "[nccl_tuning]") {
  // Tree all-reduce: base + 2((ppn - 1) intraLat + log2(nNodes) interLat).
  TuningInput in = all_reduce(16, 2, 16, 20.6, 6.0);
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).latency_us ==
        Approx(8.4 + 2 * (7 * 4.0 + 1 * 14.0)));  // 92.4
  CHECK(estimate(in, Algorithm::Tree, Protocol::LL).latency_us ==
        Approx(6.8 + 2 * (7 * 0.6 + 1 * 5.0)));
  CHECK(estimate(in, Algorithm::Tree, Protocol::LL128).latency_us ==
        Approx(14.0 + 2 * (7 * 1.25 + 1 * 8.5)));
  // log2 of the node count rounds down: 6 nodes -> 2 levels.
  in = all_reduce(48, 6, 16, 20.6, 6.0);
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).latency_us ==
        Approx(8.4 + 2 * (7 * 4.0 + 2 * 14.0)));

  // One rank per node: the network step uses the tree's NET latency (LL 5.0, not 2.7).
  in = all_reduce(8, 8, 8, 12.0, 12.0);
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).latency_us == Approx(6.6 + 14 * 5.0));
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).latency_us ==
        Approx(8.4 + 2 * 3 * 14.0));  // 92.4

  // AMD host: netOverhead 2 us (6 us for Simple).
  in = all_reduce(16, 2, 16, 20.6, 6.0);
  in.intel_cpu = false;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).latency_us == Approx(6.6 + 28 * 2.0 + 2 * 2.7));
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us ==
        Approx(8.4 + 28 * 6.0 + 2 * 14.0));

  // latencyInter is added to each network step, twice for Simple (flush).
  in = all_reduce(16, 2, 16, 20.6, 6.0);
  in.latency_inter_us = 2.0;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).latency_us == Approx(40.0 + 2 * 2.0));
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us == Approx(131.6 + 2 * 4.0));

  // PCI inside the node.
  in = all_reduce(8, 1, 2, 12.0, 0);
  in.nvlink_intra = false;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us == Approx(8.4 + 14 * 5.7));

  // All-gather: nRanks - 1 steps, nNodes - 1 of them over the network.
  in = all_reduce(16, 2, 16, 20.6, 6.0);
  in.op = Collective::AllGather;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).latency_us == Approx(6.6 + 14 * 1.0 + 2.7));
  in.op = Collective::ReduceScatter;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us ==
        Approx(8.4 + 14 * 3.4 + 14.0));

  // Broadcast / reduce: one step if the channels are the same, else nRanks steps (Simple
  // counted with the tree's step latency).
  in = all_reduce(8, 1, 16, 20.6, 0);
  in.op = Collective::Broadcast;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us == Approx(8.4 + 3.4));
  in.same_channels = false;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).latency_us == Approx(8.4 + 8 * 4.0));
  in.op = Collective::Reduce;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).latency_us == Approx(6.6 + 8 * 0.6));
}

TEST_CASE("bandwidth: bus bandwidth, per-architecture caps and algorithm bandwidth",
          "[nccl_tuning]") {
  // Ring all-reduce: algBw = busBw n / (2(n - 1)); up to 2 nodes busBw uses bwIntra.
  TuningInput in = all_reduce(16, 2, 16, 20.6, 6.0);
  const double bus2 = 16 * 20.6;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).bandwidth == Approx(bus2 * 16 / 30.0));
  // Tree all-reduce: min(0.92 busBw, nCh perChMaxTreeBw) x 0.5; Hopper N2 cap 41.4.
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).bandwidth ==
        Approx(std::min(0.92 * bus2, 16 * 41.4) * 0.5));
  // Ring LL: min(llMaxBw, busBw / 2), llMaxBw from the CPU row on several nodes: Intel N2 39.0.
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).bandwidth == Approx(39.0 * 16 / 30.0));
  in.intel_cpu = false;  // AMD N2 22.5
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).bandwidth == Approx(22.5 * 16 / 30.0));
  in.intel_cpu = true;
  // Ring LL128: min(0.92 busBw, nCh x 36.7) on Hopper.
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL128).bandwidth ==
        Approx(std::min(0.92 * bus2, 16 * 36.7) * 16 / 30.0));
  // Tree LL: then min(busBw / 3.8, llMaxBw); tree LL128: min(busBw 120/128, nCh cap).
  const double tree_bus = std::min(0.92 * bus2, 16 * 41.4);
  CHECK(estimate(in, Algorithm::Tree, Protocol::LL).bandwidth ==
        Approx(std::min(tree_bus / 3.8, 39.0) * 0.5));
  CHECK(estimate(in, Algorithm::Tree, Protocol::LL128).bandwidth ==
        Approx(std::min(tree_bus * 120 / 128, 16 * 36.7) * 0.5));
  // The tree graph's TREE pattern takes another 15%.
  in.tree_pattern_tree = true;
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).bandwidth == Approx(tree_bus * 0.85 * 0.5));

  // More than 2 nodes: bwInter, and the N4 column (Intel LL 20.4, tree cap 36.0).
  in = all_reduce(64, 8, 4, 20.6, 12.0);
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).bandwidth == Approx(4 * 12.0 * 64 / 126.0));
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).bandwidth == Approx(20.4 * 64 / 126.0));
  in.channels = 16;  // 0.92 x 192 = 176.6 under the cap 16 x 36.0 = 576
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).bandwidth ==
        Approx(std::min(0.92 * 192, 16 * 36.0) * 0.5));
  in.bw_inter = 48.0;  // 0.92 x 768 = 706.6 > 576: the Hopper N4 cap binds
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).bandwidth == Approx(16 * 36.0 * 0.5));

  // One node: llMaxBws row by GPU (Hopper 141), tree LL128 uses 7/9.
  in = all_reduce(8, 1, 16, 20.6, 0);
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).bandwidth ==
        Approx(std::min(141.0, 16 * 20.6 / 2) * 8 / 14.0));
  CHECK(estimate(in, Algorithm::Tree, Protocol::LL128).bandwidth ==
        Approx(std::min(std::min(0.92 * 16 * 20.6, 16 * 38.7) * 7 / 9, 16 * 36.7) * 0.5));
  // Blackwell caps: ring LL128 40 per channel, LL 282.
  in = all_reduce(8, 1, 16, 60.0, 0);
  in.compute_capability = 100;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL128).bandwidth == Approx(16 * 40.0 * 8 / 14.0));
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).bandwidth == Approx(282.0 * 8 / 14.0));
  // Ampere one node: tree cap 24.0 per channel.
  in.compute_capability = 80;
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).bandwidth == Approx(16 * 24.0 * 0.5));

  // All-gather: algBw = busBw n / (n - 1); broadcast: busBw.
  in = all_reduce(8, 1, 16, 20.6, 0);
  in.op = Collective::AllGather;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).bandwidth == Approx(16 * 20.6 * 8 / 7.0));
  in.op = Collective::Broadcast;
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).bandwidth == Approx(16 * 20.6));
}

TEST_CASE("time = latency + bytes / (1000 algBw), with the tree correction factor",
          "[nccl_tuning]") {
  TuningInput in = all_reduce(16, 2, 16, 20.6, 6.0);
  const double ring_bw = 16 * 20.6 * 16 / 30.0;
  const double tree_bw = std::min(0.92 * 16 * 20.6, 16 * 41.4) * 0.5;
  in.bytes = 1 << 20;  // log2(1 MiB / 64) = 14: Simple 0.5, LL 0.5, LL128 0.6
  CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).time_us ==
        Approx(131.6 * 1.4 + (1 << 20) / (1000 * ring_bw)));
  CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).time_us ==
        Approx(92.4 + (1 << 20) / (1000 * tree_bw * 0.5)));
  const Estimate ll = estimate(in, Algorithm::Tree, Protocol::LL);
  CHECK(ll.time_us == Approx(ll.latency_us + (1 << 20) / (1000 * ll.bandwidth * 0.5)));
  const Estimate ll128 = estimate(in, Algorithm::Tree, Protocol::LL128);
  CHECK(ll128.time_us == Approx(ll128.latency_us + (1 << 20) / (1000 * ll128.bandwidth * 0.6)));
  // Table edges: 64 B is index 0 (Simple 0.9), 512 MiB index 23 (0.9); below 64 B and from
  // 1 GiB on, NCCL applies no correction.
  for (int64_t bytes :
       {int64_t{32}, int64_t{64}, int64_t{127}, int64_t{512} << 20, kGiB, 4 * kGiB}) {
    in.bytes = bytes;
    const double f = (bytes >= 64 && bytes < kGiB) ? 0.9 : 1.0;
    INFO(bytes << " bytes");
    CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).time_us ==
          Approx(92.4 + bytes / (1000 * tree_bw * f)));
  }
}

TEST_CASE("what is enabled", "[nccl_tuning]") {
  TuningInput in = all_reduce(8, 1, 16, 20.6, 0);
  in.bytes = 1 << 20;
  for (Collective op : {Collective::AllGather, Collective::ReduceScatter, Collective::Broadcast,
                        Collective::Reduce}) {
    in.op = op;
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple}) {
      const Estimate e = estimate(in, Algorithm::Tree, p);
      CHECK_FALSE(e.enabled);
      CHECK(e.time_us < 0);
      CHECK(estimate(in, Algorithm::Ring, p).enabled);
    }
  }
  // LL128 needs NVLink inside the node and a validated GPU generation.
  in.op = Collective::AllReduce;
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL128).enabled);
  in.nvlink_intra = false;
  CHECK_FALSE(estimate(in, Algorithm::Ring, Protocol::LL128).enabled);
  CHECK(estimate(in, Algorithm::Ring, Protocol::LL).enabled);
  in.nvlink_intra = true;
  in.compute_capability = 86;
  CHECK_FALSE(estimate(in, Algorithm::Tree, Protocol::LL128).enabled);
  // One rank: nothing to tune.
  in = all_reduce(1, 1, 1, 20.6, 0);
  CHECK_FALSE(estimate(in, Algorithm::Ring, Protocol::Simple).enabled);
}

TEST_CASE("channels_for drops channels until each has enough work", "[nccl_tuning]") {
  // Simple: 512 threads x 64 B = 32 KiB per channel.
  CHECK(channels_for(1 << 20, 16, Algorithm::Ring, Protocol::Simple, 8) == 16);
  CHECK(channels_for(512 << 10, 16, Algorithm::Ring, Protocol::Simple, 8) == 16);
  CHECK(channels_for((512 << 10) - 1, 16, Algorithm::Ring, Protocol::Simple, 8) == 15);
  CHECK(channels_for(64 << 10, 16, Algorithm::Ring, Protocol::Simple, 8) == 2);
  CHECK(channels_for((64 << 10) - 1, 16, Algorithm::Ring, Protocol::Simple, 8) == 1);
  CHECK(channels_for(8, 16, Algorithm::Ring, Protocol::Simple, 8) == 1);
  CHECK(channels_for(64 << 10, 16, Algorithm::Tree, Protocol::Simple, 8) == 2);
  // LL: 512 threads x 8 B, times nRanks for ring only.
  CHECK(channels_for(64 << 10, 16, Algorithm::Ring, Protocol::LL, 8) == 2);   // 32 KiB/channel
  CHECK(channels_for(64 << 10, 16, Algorithm::Tree, Protocol::LL, 8) == 16);  // 4 KiB/channel
  CHECK(channels_for(20 << 10, 16, Algorithm::Tree, Protocol::LL, 8) == 5);
  // LL128: 640 threads x 8 B = 5120 B per channel.
  CHECK(channels_for(50000, 16, Algorithm::Ring, Protocol::LL128, 8) == 9);
  CHECK(channels_for(int64_t{1} << 40, 16, Algorithm::Ring, Protocol::LL128, 8) == 16);
}

TEST_CASE("choose_algorithm follows the model: tree for small, ring for large all-reduce",
          "[nccl_tuning]") {
  // 8 nodes x 1 rank, 8 channels of 12 GB/s.
  TuningInput in = all_reduce(8, 8, 8, 12.0, 12.0);
  for (int64_t bytes : {int64_t{8}, int64_t{1} << 10, int64_t{64} << 10, int64_t{1} << 20}) {
    in.bytes = bytes;
    INFO(bytes << " bytes");
    REQUIRE(ref_tree_time(in, bytes) < ref_ring_time(in, bytes));
    CHECK(estimate(in, Algorithm::Tree, Protocol::Simple).time_us ==
          Approx(ref_tree_time(in, bytes)));
    CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).time_us ==
          Approx(ref_ring_time(in, bytes)));
    CHECK(choose_algorithm(in) == Algorithm::Tree);
  }
  for (int64_t bytes : {int64_t{256} << 20, kGiB, 16 * kGiB}) {
    in.bytes = bytes;
    INFO(bytes << " bytes");
    REQUIRE(ref_ring_time(in, bytes) < ref_tree_time(in, bytes));
    CHECK(estimate(in, Algorithm::Ring, Protocol::Simple).time_us ==
          Approx(ref_ring_time(in, bytes)));
    CHECK(choose_algorithm(in) == Algorithm::Ring);
  }
  // Tree is never chosen for all-gather, whatever the size or protocol.
  in.op = Collective::AllGather;
  for (int l = 3; l <= 36; ++l) {
    in.bytes = int64_t{1} << l;
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
      CHECK(choose_algorithm(in, p) == Algorithm::Ring);
  }
}

TEST_CASE("crossover_bytes is the power of two where ring starts to win for good",
          "[nccl_tuning]") {
  TuningInput a = all_reduce(8, 8, 8, 12.0, 12.0);
  TuningInput b = all_reduce(16, 2, 16, 20.6, 6.0);
  for (const TuningInput& in : {a, b}) {
    const int64_t c = crossover_bytes(in, Algorithm::Ring, Algorithm::Tree, Protocol::Simple);
    INFO(in.ranks << " ranks, " << in.nodes << " nodes: crossover " << c);
    REQUIRE(c > 8);
    CHECK((c & (c - 1)) == 0);
    // The independent model agrees on which side of c each power of two lies.
    for (int l = 3; l <= 36; ++l) {
      const int64_t s = int64_t{1} << l;
      if (s >= c) CHECK(ref_ring_time(in, s) < ref_tree_time(in, s));
    }
    CHECK(ref_ring_time(in, c / 2) >= ref_tree_time(in, c / 2));
    // And the implementation's own times cross there.
    TuningInput at = in;
    at.bytes = c;
    CHECK(estimate(at, Algorithm::Ring, Protocol::Simple).time_us <
          estimate(at, Algorithm::Tree, Protocol::Simple).time_us);
    at.bytes = c / 2;
    CHECK(estimate(at, Algorithm::Ring, Protocol::Simple).time_us >=
          estimate(at, Algorithm::Tree, Protocol::Simple).time_us);
  }
  // Tree never beats ring at 64 GiB here; for all-gather tree is never enabled.
  CHECK(crossover_bytes(a, Algorithm::Tree, Algorithm::Ring, Protocol::Simple) == -1);
  TuningInput ag = b;
  ag.op = Collective::AllGather;
  CHECK(crossover_bytes(ag, Algorithm::Ring, Algorithm::Tree, Protocol::Simple) == 8);
  CHECK(crossover_bytes(ag, Algorithm::Tree, Algorithm::Ring, Protocol::Simple) == -1);
}
