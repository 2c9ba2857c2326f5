// The perftest and nccl-tests log readers on real logs (tests/data/logs, origins in its README):
// rows picked from each log and checked against its text, and the errors on cut or garbled logs.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hw/import/log_lines.h"
#include "hw/import/nccl_tests_log.h"
#include "hw/import/perftest_log.h"
#include "sim/cli/import.h"

using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

const std::filesystem::path kLogs = std::filesystem::path(FABTWIN_TEST_DATA) / "logs";

std::string log_text(const std::string& name) {
  std::ifstream in(kLogs / name, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The first `n` lines of `text`.
std::string first_lines(const std::string& text, int n) {
  std::string out;
  for (const LogLine& l : split_lines(text)) {
    if (l.number > n) break;
    out += l.text + "\n";
  }
  return out;
}

// `text` with `from` replaced by `to` once (it must occur).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

constexpr double kMiB = 1048576.0 * 8;

}  // namespace

TEST_CASE("perftest: ib_write_bw -a --report_gbits over InfiniBand (perftest#132)", "[import]") {
  const PerftestLog log =
      parse_perftest_log(log_text("perftest/write_bw_ib_all_sizes_gbits.log"), "x");
  REQUIRE(log.runs.size() == 1);
  const PerftestRun& run = log.runs[0];
  CHECK(run.test == "ib_write_bw");
  CHECK(run.title == "RDMA_Write BW Test");
  CHECK_FALSE(run.bidirectional);
  CHECK(run.device == "mlx5_0");
  CHECK(run.link_type == "IB");
  CHECK(run.connection == "RC");
  CHECK(run.transport == "IB");
  CHECK(run.mtu_bytes == 4096);
  CHECK(run.tx_depth == 128);
  CHECK(run.cq_moderation == 100);
  CHECK(run.inline_bytes == 0);
  CHECK(run.qps == 1);
  CHECK(run.gid_index == -1);  // InfiniBand: no GID index printed
  CHECK(run.rdma_cm == "OFF");
  CHECK(run.data_exchange == "Ethernet");
  CHECK(run.bandwidth_unit == "Gb/sec");
  CHECK(run.local.lid == "0x02");
  CHECK(run.local.qpn == "0x0032");
  CHECK(run.local.psn == "0x5f2841");
  CHECK(run.local.rkey == "0x002440");
  CHECK(run.local.gid.empty());
  CHECK(run.remote.lid == "0x01");
  CHECK(run.remote.qpn == "0x003a");
  CHECK(run.remote.vaddr == "0x007f443b2f8000");
  REQUIRE(log.bandwidth.size() == 3);
  CHECK(log.latency.empty());
  // " 2          5000           0.042350            0.042185            2.636533" (6 decimals)
  CHECK(log.bandwidth[0].bytes == 2);
  CHECK(log.bandwidth[0].iterations == 5000);
  CHECK(log.bandwidth[0].peak_bps == Approx(0.042350e9));
  CHECK(log.bandwidth[0].average_bps == Approx(0.042185e9));
  CHECK(log.bandwidth[0].msg_rate_mpps == Approx(2.636533));
  // " 8          5000             0.17               0.17   \t\t   2.641399" (tabs)
  CHECK(log.bandwidth[2].bytes == 8);
  CHECK(log.bandwidth[2].average_bps == Approx(0.17e9));
  CHECK(log.bandwidth[2].msg_rate_mpps == Approx(2.641399));
  CHECK(log.bandwidth[2].line == 23);
  CHECK(log.bandwidth[2].sl == -1);
}

TEST_CASE("perftest: post-list ib_write_bw over RoCE, Gb/s, no address lines (perftest#273)",
          "[import]") {
  const PerftestLog log = parse_perftest_log(log_text("perftest/write_bw_postlist_gbits.log"), "x");
  REQUIRE(log.runs.size() == 1);
  const PerftestRun& run = log.runs[0];
  CHECK(run.title == "RDMA_Write Post List BW Test");
  CHECK(run.test == "ib_write_bw");
  CHECK(run.device == "ib0");
  CHECK(run.link_type == "Ethernet");
  CHECK(run.gid_index == 2);
  CHECK(run.post_list == 128);
  CHECK(run.tx_depth == 256);
  CHECK(run.cq_moderation == 128);
  CHECK(run.local.qpn.empty());
  // Every setting kept as printed, "PCIe relax order: Unsupported" included.
  CHECK(std::find(run.settings.begin(), run.settings.end(),
                  std::pair<std::string, std::string>{"PCIe relax order", "Unsupported"}) !=
        run.settings.end());
  REQUIRE(log.bandwidth.size() == 1);
  CHECK(log.bandwidth[0].bytes == 8);
  CHECK(log.bandwidth[0].iterations == 224958464);
  CHECK(log.bandwidth[0].peak_bps == 0);  // perftest did not measure the peak (-D)
  CHECK(log.bandwidth[0].average_bps == Approx(0.48e9));
  CHECK(log.bandwidth[0].msg_rate_mpps == Approx(7.498617));
}

TEST_CASE("perftest: ib_atomic_bw, MB/sec (2^20 B/s), banner after a remark (pib#4)", "[import]") {
  const PerftestLog log = parse_perftest_log(log_text("perftest/atomic_bw_pib.log"), "x");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.runs[0].test == "ib_atomic_bw");
  CHECK(log.runs[0].title == "Atomic CMP_AND_SWAP BW Test");
  CHECK(log.runs[0].device == "pib_1");
  CHECK(log.runs[0].outstanding_reads == 16);
  CHECK(log.runs[0].connection == "RC");
  CHECK(log.runs[0].local.qpn == "0xba1c93");
  CHECK(log.runs[0].remote.psn == "0x316dee");
  CHECK(log.runs[0].bandwidth_unit == "MB/sec");
  REQUIRE(log.bandwidth.size() == 1);
  CHECK(log.bandwidth[0].bytes == 8);
  CHECK(log.bandwidth[0].iterations == 1000);
  CHECK(log.bandwidth[0].peak_bps == Approx(1.70 * kMiB));
  CHECK(log.bandwidth[0].average_bps == Approx(1.67 * kMiB));
  CHECK(log.bandwidth[0].msg_rate_mpps == Approx(0.219031));
}

TEST_CASE("perftest: an old ib_send_bw -a over UD, without MsgRate (RDMA-Experiment)", "[import]") {
  const PerftestLog log = parse_perftest_log(log_text("perftest/send_bw_ud_old.log"), "x");
  REQUIRE(log.runs.size() == 1);
  CHECK(log.runs[0].test == "ib_send_bw");
  CHECK(log.runs[0].connection == "UD");
  CHECK(log.runs[0].mtu_bytes == 2048);
  CHECK(log.runs[0].local.lid == "0x02");
  CHECK(log.runs[0].local.qpn == "0x70004b");
  CHECK(log.runs[0].remote.psn == "0xfaa100");
  REQUIRE(log.bandwidth.size() == 11);
  // "    512        1000            1600.46                774.67"
  CHECK(log.bandwidth[8].bytes == 512);
  CHECK(log.bandwidth[8].iterations == 1000);
  CHECK(log.bandwidth[8].peak_bps == Approx(1600.46 * kMiB));
  CHECK(log.bandwidth[8].average_bps == Approx(774.67 * kMiB));
  CHECK(log.bandwidth[8].msg_rate_mpps == -1);  // no MsgRate column then
  CHECK(log.bandwidth[10].average_bps == Approx(2919.91 * kMiB));
}

TEST_CASE("perftest: ib_read_lat over RoCE on ConnectX-5, full latency table (spiderpool)",
          "[import]") {
  // Two pods on two hosts; the log is indented as the documentation's code block has it, and
  // libibverbs warnings and perftest's CPU-frequency remarks come before and inside the table.
  const PerftestLog sriov =
      parse_perftest_log(log_text("perftest/read_lat_roce_cx5_sriov.log"), "x");
  REQUIRE(sriov.runs.size() == 1);
  CHECK(sriov.runs[0].test == "ib_read_lat");
  CHECK(sriov.runs[0].device == "mlx5_5");
  CHECK(sriov.runs[0].link_type == "Ethernet");
  CHECK(sriov.runs[0].gid_index == 2);
  CHECK(sriov.runs[0].mtu_bytes == 1024);
  CHECK(sriov.runs[0].outstanding_reads == 16);
  CHECK(sriov.runs[0].local.qpn == "0x0b69");
  CHECK(sriov.runs[0].remote.gid == "00:00:00:00:00:00:00:00:00:00:255:255:172:81:00:118");
  CHECK(sriov.bandwidth.empty());
  REQUIRE(sriov.latency.size() == 1);
  // " 2       1000          6.66           20.37        6.74              6.82         0.78
  //   7.15        20.37"
  const PerftestLatencyRow& r = sriov.latency[0];
  CHECK(r.bytes == 2);
  CHECK(r.iterations == 1000);
  CHECK(r.t_min_ps == 6'660'000);
  CHECK(r.t_max_ps == 20'370'000);
  CHECK(r.t_typical_ps == 6'740'000);
  CHECK(r.t_avg_ps == 6'820'000);
  CHECK(r.t_stdev_ps == 780'000);
  CHECK(r.t_p99_ps == 7'150'000);
  CHECK(r.t_p999_ps == 20'370'000);

  const PerftestLog macvlan =
      parse_perftest_log(log_text("perftest/read_lat_roce_cx5_macvlan.log"), "x");
  REQUIRE(macvlan.latency.size() == 1);
  CHECK(macvlan.runs[0].gid_index == 12);
  CHECK(macvlan.latency[0].t_typical_ps == 7'040'000);
  CHECK(macvlan.latency[0].t_p99_ps == 7'380'000);
  CHECK(macvlan.latency[0].t_max_ps == 16'810'000);
}

TEST_CASE("perftest: cut and garbled logs are refused, naming the line", "[import]") {
  // A real log cut inside its only row (perftest#234 as quoted).
  CHECK_THROWS_WITH(
      parse_perftest_log(log_text("perftest/write_bw_roce_mbs_cut.log"), "cut.log"),
      "cut.log:25: expected a result row of 5 numbers (the table header is line 24), found "
      "'65536      664644'");
  // A real log cut inside its table header (RDMA-Tutorial#8 as quoted).
  CHECK_THROWS_WITH(parse_perftest_log(log_text("perftest/write_lat_roce_cx3_cut.log"), "lat.log"),
                    Catch::StartsWith("lat.log:25: expected a perftest table header") &&
                        Catch::EndsWith("found '#bytes #iterat'"));
  const std::string whole = log_text("perftest/write_bw_ib_all_sizes_gbits.log");
  // Cut after the table header: no row.
  CHECK_THROWS_WITH(parse_perftest_log(first_lines(whole, 20), "h.log"),
                    "h.log:21: expected a result row, found the end of the log");
  // Cut before the table.
  CHECK_THROWS_WITH(parse_perftest_log(first_lines(whole, 12), "b.log"),
                    Catch::StartsWith("b.log:13: expected a perftest result table"));
  // A letter in a number.
  CHECK_THROWS_WITH(parse_perftest_log(replaced(whole, "0.084457", "0.08445x"), "g.log"),
                    Catch::StartsWith("g.log:22: expected a result row of 5 numbers") &&
                        Catch::Contains("0.08445x"));
  // A fractional message size.
  CHECK_THROWS_WITH(
      parse_perftest_log(replaced(whole, " 4          5000", " 4.5        5000"), "f.log"),
      Catch::StartsWith("f.log:22: expected a whole number in column 1"));
  // A table without its banner; not perftest output at all.
  CHECK_THROWS_WITH(parse_perftest_log(whole.substr(whole.find(" #bytes")), "n.log"),
                    Catch::StartsWith("n.log:1: expected a perftest banner"));
  CHECK_THROWS_WITH(parse_perftest_log(log_text("nccl-tests/all_reduce_2xk80_na.log"), "k.log"),
                    Catch::StartsWith("k.log:") && Catch::Contains("perftest result table"));
}

TEST_CASE("nccl-tests: 2 nodes of 8 H100, v2.13 layout with Group and PCI address", "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_2x8_h100_v2.13.log"), "x");
  CHECK(log.program == "all_reduce_perf");  // from the mpirun command line quoted above the output
  CHECK(nccl_tests_op(log.program) == "all_reduce");
  CHECK(log.threads == 1);
  CHECK(log.gpus_per_thread == 1);
  CHECK(log.min_bytes == 8);
  CHECK(log.max_bytes == 8589934592);
  CHECK(log.warmup_iterations == 5);
  CHECK(log.iterations == 20);
  CHECK(log.agg_iterations == 1);
  CHECK(log.validation == 1);
  REQUIRE(log.devices.size() == 16);
  CHECK(log.devices[10].rank == 10);
  CHECK(log.devices[10].group == 0);
  CHECK(log.devices[10].pid == 6735);
  CHECK(log.devices[10].host == "ztan-mig-gq73");
  CHECK(log.devices[10].device == 2);
  CHECK(log.devices[10].bus == "0000:0b:00");
  CHECK(log.devices[10].name == "NVIDIA H100 80GB HBM3");
  REQUIRE(log.rows.size() == 31);
  const NcclTestsRow& r = log.rows[25];  // "   268435456      67108864     float     sum      -1
                                         // 2360.9  113.70 213.19      0   2359.9  113.75  213.28 0"
  CHECK(r.size == 268435456);
  CHECK(r.count == 67108864);
  CHECK(r.type == "float");
  CHECK(r.redop == "sum");
  CHECK(r.root == -1);
  CHECK(r.time_us == Approx(2360.9));
  CHECK(r.algbw == Approx(113.70));
  CHECK(r.busbw == Approx(213.19));
  CHECK(r.wrong == "0");
  CHECK(r.in_place_time_us == Approx(2359.9));
  CHECK(r.in_place_busbw == Approx(213.28));
  CHECK(log.rows.back().time_us == Approx(47535));  // printed without decimals past 10 ms
  CHECK(log.rows.back().size == 8589934592);
  CHECK(log.out_of_bounds == "0 OK");
  REQUIRE(log.avg_bus_bandwidth);
  CHECK(*log.avg_bus_bandwidth == Approx(70.742));
  CHECK(log.info.empty());
  CHECK(log.nccl_version.empty());
}

TEST_CASE("nccl-tests: #wrong as N/A, device lines without Group (PerfKitBenchmarker)",
          "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_2xk80_na.log"), "x");
  CHECK(log.program.empty());  // the log does not say: the importer asks for --op
  CHECK(log.iterations == 1);
  CHECK(log.validation == 0);
  REQUIRE(log.devices.size() == 2);
  CHECK(log.devices[1].group == -1);
  CHECK(log.devices[1].host == "pkb-2b6a393d-3");
  CHECK(log.devices[1].bus == "0x00");
  CHECK(log.devices[1].name == "Tesla K80");
  REQUIRE(log.rows.size() == 11);
  CHECK(log.rows[3].size == 8388608);
  CHECK(log.rows[3].time_us == Approx(14868));
  CHECK(log.rows[3].wrong == "N/A");
  CHECK(log.rows[10].in_place_time_us == Approx(1763386));
  CHECK(*log.avg_bus_bandwidth == Approx(0.565546));
}

TEST_CASE("nccl-tests: oldest rows, without redop and root, error as 0e+00 (nccl#340)",
          "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_nccl2.6_oldest_rows.log"), "x");
  REQUIRE(log.rows.size() == 12);
  CHECK(log.rows[6].size == 4194304);
  CHECK(log.rows[6].count == 524288);
  CHECK(log.rows[6].type == "float");
  CHECK(log.rows[6].redop.empty());
  CHECK(log.rows[6].root == -1);
  CHECK(log.rows[6].time_us == Approx(120.1));
  CHECK(log.rows[6].algbw == Approx(17.46));
  CHECK(log.rows[6].wrong == "0e+00");
  CHECK(log.rows[6].in_place_time_us == Approx(115.5));
  CHECK(*log.avg_bus_bandwidth == Approx(6.6972));
}

TEST_CASE("nccl-tests: newest layout with version lines (v2.20.0), all_gather v2.13.6",
          "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_2x1_gb10_v2.20.log"), "x");
  CHECK(log.tests_version == "2.20.0");
  CHECK(log.program == "all_reduce_perf");
  CHECK(log.warmup_iterations == 10);
  CHECK(log.iterations == 100);
  REQUIRE(log.devices.size() == 2);
  CHECK(log.devices[1].host == "spark-dbf4");
  CHECK(log.devices[1].bus == "000f:01:00");
  CHECK(log.devices[1].name == "NVIDIA GB10");
  REQUIRE(log.rows.size() == 4);
  CHECK(log.rows[3].size == 65536);
  CHECK(log.rows[3].time_us == Approx(67.93));
  CHECK(log.rows[3].in_place_algbw == Approx(1.01));
  CHECK_FALSE(log.avg_bus_bandwidth);  // the quoted log ends before the footer

  const NcclTestsLog gather =
      parse_nccl_tests_log(log_text("nccl-tests/all_gather_1x1_v2.13.6_nix.log"), "x");
  CHECK(gather.program == "all_gather_perf");  // from the "Running .../all_gather_perf" line
  CHECK(nccl_tests_op(gather.program) == "all_gather");
  REQUIRE(gather.rows.size() == 1);
  CHECK(gather.rows[0].redop == "none");
  CHECK(gather.rows[0].algbw == Approx(1816.16));
  CHECK(gather.rows[0].in_place_algbw == Approx(619657.10));
}

TEST_CASE("nccl-tests: NCCL INFO lines between the rows and the footer (nccl#1706)", "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_nccl2.2x_destroy_footer.log"), "x");
  REQUIRE(log.rows.size() == 1);
  CHECK(log.rows[0].time_us == Approx(5190.8));
  REQUIRE(log.info.size() == 2);
  CHECK(log.info[0].line == 2);
  CHECK(log.info[1].text.find("Destroy COMPLETE") != std::string::npos);
  CHECK(log.nranks == 2);
  CHECK(*log.avg_bus_bandwidth == Approx(8.62002));
}

TEST_CASE("nccl-tests: what NCCL's debug lines tell (lines of several threads)", "[import]") {
  NcclTestsLog log;
  std::vector<LogLine> lines = split_lines(log_text("nccl-tests/nccl_info_lines.log"));
  REQUIRE(lines.size() == 8);
  read_nccl_debug_line(log, lines[0].text);  // "NCCL version 2.4.8+cuda10.0" (nccl#257)
  CHECK(log.nccl_version == "2.4.8+cuda10.0");
  read_nccl_debug_line(log, lines[1].text);  // "NET/Socket : Using [0]eth0": not "Using network"
  read_nccl_debug_line(log, lines[2].text);
  CHECK(log.network.empty());
  read_nccl_debug_line(log, lines[3].text);  // "NCCL INFO Using network IBext_v8" (nccl#1291)
  CHECK(log.network == "IBext_v8");
  read_nccl_debug_line(log, lines[4].text);  // "... rank 1 nRanks 2 nNodes 2 localRanks 1 ..."
  CHECK(log.nranks == 2);
  CHECK(log.nnodes == 2);
  read_nccl_debug_line(log, lines[5].text);  // "NCCL INFO Channel 00/04 :    0   1"
  CHECK(log.channels == 4);
  read_nccl_debug_line(log, lines[6].text);  // "NCCL INFO 8 coll channels, ..." (nccl#629)
  CHECK(log.channels == 8);
  read_nccl_debug_line(log, lines[7].text);  // NCCL_CROSS_NIC set by environment: not ALGO
  CHECK(log.algorithm.empty());
  CHECK(log.protocol.empty());
  // The version line of a whole header (open-gpu-kernel-modules#45).
  NcclTestsLog header;
  for (const LogLine& l : split_lines(log_text("nccl-tests/all_reduce_nccl2.26_info_header.log"))) {
    read_nccl_debug_line(header, l.text);
  }
  CHECK(header.nccl_version == "2.26.5+cuda12.9");
  CHECK(header.network == "IB");
}

TEST_CASE("nccl-tests: lines tagged by mpirun --tag-output", "[import]") {
  // The PerfKitBenchmarker log as `mpirun --tag-output` would print it on rank 0.
  std::string tagged;
  for (const LogLine& l : split_lines(log_text("nccl-tests/all_reduce_2xk80_na.log"))) {
    tagged += "[1,0]<stdout>:" + l.text + "\n";
  }
  const NcclTestsLog log = parse_nccl_tests_log(tagged, "x");
  REQUIRE(log.rows.size() == 11);
  CHECK(log.rows[3].time_us == Approx(14868));
  CHECK(log.devices.size() == 2);
  CHECK(*log.avg_bus_bandwidth == Approx(0.565546));
}

TEST_CASE("nccl-tests: cut and garbled logs are refused, naming the line", "[import]") {
  // A real log with an elision ("...") inside its table (nccl#1184 as quoted).
  CHECK_THROWS_WITH(
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_nccl2.18_wrong_elided.log"), "e.log"),
      "e.log:5: expected a result row or the '# Out of bounds values' footer, found '...'");
  // A real header with NCCL INFO lines and no table (open-gpu-kernel-modules#45 as quoted).
  CHECK_THROWS_WITH(
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_nccl2.26_info_header.log"), "i.log"),
      Catch::StartsWith("i.log:15: expected an nccl-tests result table"));
  const std::string whole = log_text("nccl-tests/all_reduce_2x8_h100_v2.13.log");
  // A row cut short (a log truncated in the middle of a line).
  const std::string cut = first_lines(whole, 40) +
                          "     4194304       1048576     float     sum      -1    364.6   11.50\n";
  CHECK_THROWS_WITH(parse_nccl_tests_log(cut, "c.log"),
                    "c.log:41: expected a result row of 13 columns, as the table header, found "
                    "'4194304       1048576     float     sum      -1    364.6   11.50'");
  // A device line cut after "Group" (found by fuzzing the importer: its group was read from a
  // word that is not there, an empty optional).
  CHECK_THROWS_WITH(parse_nccl_tests_log(first_lines(whole, 11) + "#  Rank  0 Group\n", "d.log"),
                    "d.log:12: expected a device line ('#  Rank N [Group G] Pid P on HOST device "
                    "D [BUS] NAME'), found '#  Rank  0 Group'");
  // A garbled number.
  CHECK_THROWS_WITH(
      parse_nccl_tests_log(replaced(whole, "  113.70  213.19", "  113.7O  213.19"), "g.log"),
      Catch::StartsWith("g.log:57: expected a number (algbw) in column 7"));
  // A second run appended after the first.
  CHECK_THROWS_WITH(
      parse_nccl_tests_log(whole + "# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor)\n",
                           "t.log"),
      Catch::StartsWith("t.log:65: expected one nccl-tests run per log"));
  // A perftest log is not nccl-tests output.
  CHECK_THROWS_WITH(
      parse_nccl_tests_log(log_text("perftest/atomic_bw_pib.log"), "p.log"),
      Catch::StartsWith("p.log:21: expected a result row of 11, 12 or 13 columns, found '8 "));
}

TEST_CASE("import: nccl-tests rows become the simulator's collective rows", "[import]") {
  const NcclTestsLog log =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_2x8_h100_v2.13.log"), "x");
  const MeasurementFile m = nccl_tests_measurement(log, "x.log", 64, "");
  REQUIRE(m.collectives.size() == 31);
  const CollectiveRow& c = m.collectives[20];
  CHECK(c.op == "all_reduce");
  CHECK(c.size == 8388608);
  CHECK(c.count == 2097152);
  CHECK(c.ranks == 16);
  CHECK(c.iterations == 20);
  CHECK(c.time_us == Approx(571.9));
  CHECK(c.algbw == Approx(14.67));
  CHECK(c.busbw == Approx(27.50));
  CHECK(c.algorithm == "unknown");
  CHECK(c.start.ps == -1);
  REQUIRE(m.gpus.size() == 16);
  CHECK(m.gpus[9].name == "ztan-mig-gq73/gpu1");
  CHECK(m.rank_gpus.size() == 31 * 16);
  REQUIRE(m.nccl_tests.size() == 31);
  CHECK(m.nccl_tests[20].in_place_time_us == Approx(563.5));
  CHECK(m.nccl_tests[20].line == 52);
  // The collective must be known: named by the log, or given, and never contradicted.
  const NcclTestsLog unnamed =
      parse_nccl_tests_log(log_text("nccl-tests/all_reduce_2xk80_na.log"), "x");
  CHECK_THROWS_WITH(nccl_tests_measurement(unnamed, "k.log", 18, ""),
                    Catch::StartsWith("k.log: the log does not name its benchmark"));
  CHECK(nccl_tests_measurement(unnamed, "k.log", 18, "all_reduce").collectives[0].op ==
        "all_reduce");
  CHECK_THROWS_WITH(nccl_tests_measurement(log, "x.log", 64, "all_gather"),
                    "x.log: --op all_gather contradicts the log, which ran all_reduce_perf");
}
