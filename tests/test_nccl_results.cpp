// The CUDA-free half of the NCCL runner: the rows it writes from per-rank times (averaged over
// the ranks, algbw and busbw as nccl-tests computes them), nccl-tests' buffer counts, and what
// NCCL's debug file tells (tests/data/observe/nccl_debug_2ranks.log).
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/import/nccl_tests_log.h"
#include "hw/nccl/nccl_results.h"

using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

std::string debug_text() {
  std::ifstream in(std::filesystem::path(FABTWIN_TEST_DATA) / "observe" / "nccl_debug_2ranks.log");
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CollectiveSpec spec_of(nccl::Op op, int ranks) {
  CollectiveSpec s;
  s.generator = 2;
  s.op = op;
  s.gpus.resize(static_cast<size_t>(ranks));
  s.iterations = 20;
  s.root = 1;
  return s;
}

}  // namespace

TEST_CASE("NCCL's TUNING line gives its algorithm, protocol and channels", "[nccl-results]") {
  const auto c = read_nccl_tuning_line(
      "gpu-a:41021:41021 [0] NCCL INFO AllReduce: 1048576 Bytes -> Algo Ring proto LL128 "
      "channel{Lo..Hi}={0..15}");
  REQUIRE(c);
  CHECK(c->function == "AllReduce");
  CHECK(c->bytes == 1048576);
  CHECK(c->algorithm == "Ring");
  CHECK(c->protocol == "LL128");
  CHECK(c->channels == 16);
  CHECK_FALSE(read_nccl_tuning_line("gpu-a:1:1 [0] NCCL INFO Using network IB"));
  CHECK_FALSE(read_nccl_tuning_line(
      "x NCCL INFO AllReduce: 12 Bytes -> Algo Ring proto LL channel{Lo..Hi}={3..1}"));
  CHECK_FALSE(read_nccl_tuning_line(
      "x NCCL INFO AllReduce: many Bytes -> Algo Ring proto LL channel{Lo..Hi}={0..1}"));
}

TEST_CASE("the debug file: INFO and WARN lines, version, network, choices", "[nccl-results]") {
  const NcclDebugCapture c = read_nccl_debug_text(debug_text());
  CHECK(c.log.info.size() == 17);
  CHECK(c.log.info.front().line == 1);
  CHECK(c.log.nccl_version == "2.28.9+cuda13.0");
  CHECK(c.log.network == "IB");
  CHECK(c.log.nranks == 2);
  CHECK(c.log.nnodes == 2);
  CHECK(c.log.channels == 2);
  REQUIRE(c.choices.size() == 5);
  CHECK(c.choices[2].protocol == "LL128");
}

TEST_CASE("a row: times averaged over the ranks, algbw, busbw, NCCL's choice", "[nccl-results]") {
  const NcclDebugCapture c = read_nccl_debug_text(debug_text());
  const CollectiveSpec s = spec_of(nccl::Op::AllReduce, 4);
  const CollectiveRow r = nccl_result_row(s, 4194304, {100, 140, 120, 120}, c.choices);
  CHECK(r.generator == 2);
  CHECK(r.op == "all_reduce");
  CHECK(r.ranks == 4);
  CHECK(r.count == 1048576);
  CHECK(r.root == -1);
  CHECK(r.iterations == 20);
  CHECK(r.time_us == Approx(120));
  CHECK(r.algbw == Approx(4194304 / 120e-6 / 1e9));
  CHECK(r.busbw == Approx(r.algbw * 2 * 3 / 4));
  // The last TUNING line for AllReduce at this size wins.
  CHECK(r.algorithm == "ring");
  CHECK(r.protocol == "Simple");
  CHECK(r.channels == 2);
  CHECK(r.gpus == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(r.start.ps == -1);

  const CollectiveRow tree = nccl_result_row(s, 65536, {10, 10, 10, 10}, c.choices);
  CHECK(tree.algorithm == "tree");
  CHECK(tree.protocol == "LL");
  const CollectiveRow unknown = nccl_result_row(s, 8, {1, 1, 1, 1}, c.choices);
  CHECK(unknown.algorithm == "unknown");
  CHECK(unknown.channels == 0);

  const CollectiveRow gather =
      nccl_result_row(spec_of(nccl::Op::AllGather, 4), 4096, {2, 2, 2, 2}, {});
  CHECK(gather.busbw == Approx(gather.algbw * 3 / 4));
  const CollectiveRow bcast =
      nccl_result_row(spec_of(nccl::Op::Broadcast, 4), 4096, {2, 2, 2, 2}, {});
  CHECK(bcast.busbw == Approx(bcast.algbw));
  CHECK(bcast.root == 1);
  const CollectiveRow a2a = nccl_result_row(spec_of(nccl::Op::AllToAll, 4), 4096, {2, 2, 2, 2}, {});
  CHECK(a2a.algorithm == "p2p");
  CHECK(a2a.busbw == Approx(a2a.algbw * 3 / 4));
}

TEST_CASE("nccl-tests' buffer counts per op", "[nccl-results]") {
  // size 4096 B of float on 4 ranks: 1024 elements in the larger buffer.
  const NcclCallCounts ar = nccl_call_counts(nccl::Op::AllReduce, 4096, 4, 4);
  CHECK(ar.send_count == 1024);
  CHECK(ar.recv_count == 1024);
  CHECK(ar.call_count == 1024);
  const NcclCallCounts ag = nccl_call_counts(nccl::Op::AllGather, 4096, 4, 4);
  CHECK(ag.send_count == 256);
  CHECK(ag.recv_count == 1024);
  CHECK(ag.call_count == 256);
  const NcclCallCounts rs = nccl_call_counts(nccl::Op::ReduceScatter, 4096, 4, 4);
  CHECK(rs.send_count == 1024);
  CHECK(rs.recv_count == 256);
  CHECK(rs.call_count == 256);
  const NcclCallCounts a2a = nccl_call_counts(nccl::Op::AllToAll, 4096, 4, 4);
  CHECK(a2a.send_count == 1024);
  CHECK(a2a.call_count == 256);
  CHECK(nccl_function_name(nccl::Op::ReduceScatter) == std::string("ReduceScatter"));
}
