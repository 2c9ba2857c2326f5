// The output of the perftest tools (ib_write_bw/lat, ib_send_bw/lat, ib_read_bw/lat, ib_atomic_*)
// as they print it: the banner with the test's settings, the local and remote queue pair
// addresses, and the result table in every layout in use (MB/s, MiB/s or Gb/s bandwidth, QoS and
// per-port columns, latency with or without average and percentiles, duration mode). Several
// tests printed one after another in one log are read as several runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/record_field.h"

namespace fabtwin::hw {

// One side's queue pair, from "local address: LID .. QPN .. PSN .." and the "GID: .." line.
struct PerftestAddress {
  std::string lid, qpn, psn, rkey, vaddr, gid;  // as printed; empty when not printed
};

// The banner of one test: its title and every "name : value" setting it printed.
struct PerftestRun {
  std::string title;  // "RDMA_Write BW Test"
  std::string test;   // ib_write_bw, ib_read_lat, ib_send_bw, ib_atomic_bw, ...
  bool bidirectional = false;
  std::string device, link_type, transport, connection;
  int64_t mtu_bytes = -1, gid_index = -1, qps = -1, tx_depth = -1, inline_bytes = -1,
          cq_moderation = -1, post_list = -1, outstanding_reads = -1;
  std::string rdma_cm, data_exchange;
  std::vector<std::pair<std::string, std::string>> settings;  // all of them, in order
  PerftestAddress local, remote;
  std::string bandwidth_unit;  // the table's unit as printed: MB/sec, MiB/sec or Gb/sec; or ""
};

// One line of a bandwidth table. Rates are converted to bits per second: perftest's MB/sec and
// MiB/sec are 2^20 B/s, its Gb/sec 10^9 b/s.
struct PerftestBandwidthRow {
  uint32_t run = 0;  // index into PerftestLog::runs
  std::string test;
  int64_t bytes = 0;
  int32_t sl = -1;  // service level of a QoS table (--sl), -1 otherwise
  int64_t iterations = 0;
  double peak_bps = -1;     // -1 when the table has no peak column; 0 when perftest skipped it
  double average_bps = -1;  // duration mode without a bandwidth column: -1
  double msg_rate_mpps = -1;
  int line = 0;  // line of the log
};

// One line of a latency table, in picoseconds; -1 for a column the table does not have (older
// perftest prints no average, deviation or percentiles; duration mode only the average).
struct PerftestLatencyRow {
  uint32_t run = 0;
  std::string test;
  int64_t bytes = 0;
  int64_t iterations = 0;
  int64_t t_min_ps = -1, t_max_ps = -1, t_typical_ps = -1, t_avg_ps = -1, t_stdev_ps = -1,
          t_p99_ps = -1, t_p999_ps = -1;
  int line = 0;
};

struct PerftestLog {
  std::vector<PerftestRun> runs;
  std::vector<PerftestBandwidthRow> bandwidth;
  std::vector<PerftestLatencyRow> latency;
};

// Reads a perftest log; `name` (the file's name) starts every error message. Throws
// LogFormatError naming the line when the log is not perftest output or a table is malformed,
// and when it holds no result row at all.
PerftestLog parse_perftest_log(std::string_view text, const std::string& name);

constexpr auto record_fields(std::type_identity<PerftestBandwidthRow>) {
  return std::tuple{
      field("run", &PerftestBandwidthRow::run, "",
            "Row of `/hw/perftest_runs`: the test it belongs to."),
      text("test", &PerftestBandwidthRow::test, 16,
           "The perftest tool: `ib_write_bw`, `ib_read_bw`, `ib_send_bw`, `ib_atomic_bw`."),
      field("bytes", &PerftestBandwidthRow::bytes, "B", "Message size (`#bytes`)."),
      field("sl", &PerftestBandwidthRow::sl, "",
            "Service level of a QoS table (`#sl`); `-1` otherwise."),
      field("iterations", &PerftestBandwidthRow::iterations, "", "Messages sent (`#iterations`)."),
      field("bw_peak_bps", &PerftestBandwidthRow::peak_bps, "b/s",
            "`BW peak`: the best rate over one CQ-moderation window, converted to b/s (perftest's "
            "MB/sec and MiB/sec are 2^20 B/s, its Gb/sec 10^9 b/s). 0 where perftest did not "
            "measure it (duration mode)."),
      field(
          "bw_average_bps", &PerftestBandwidthRow::average_bps, "b/s",
          "`BW average`: bytes over the time from the first post to the last completion, in b/s."),
      field("msg_rate_mpps", &PerftestBandwidthRow::msg_rate_mpps, "Mpps",
            "`MsgRate`: messages per second, in millions."),
  };
}

constexpr auto record_fields(std::type_identity<PerftestLatencyRow>) {
  return std::tuple{
      field("run", &PerftestLatencyRow::run, "", "Row of `/hw/perftest_runs`."),
      text("test", &PerftestLatencyRow::test, 16,
           "The perftest tool: `ib_write_lat`, `ib_read_lat`, `ib_send_lat`, `ib_atomic_lat`."),
      field("bytes", &PerftestLatencyRow::bytes, "B", "Message size (`#bytes`)."),
      field("iterations", &PerftestLatencyRow::iterations, "",
            "Round trips measured (`#iterations`)."),
      field(
          "t_min_ps", &PerftestLatencyRow::t_min_ps, "ps",
          "`t_min`: the shortest latency. Write and send tests report half the round trip, read "
          "and atomic tests the whole. `-1` where the table has no such column (here and below)."),
      field("t_max_ps", &PerftestLatencyRow::t_max_ps, "ps",
            "`t_max`: the longest, after perftest drops its two largest samples."),
      field("t_typical_ps", &PerftestLatencyRow::t_typical_ps, "ps", "`t_typical`: the median."),
      field("t_avg_ps", &PerftestLatencyRow::t_avg_ps, "ps",
            "`t_avg`: the mean (the only column of duration mode)."),
      field("t_stdev_ps", &PerftestLatencyRow::t_stdev_ps, "ps",
            "`t_stdev`: the standard deviation."),
      field("t_p99_ps", &PerftestLatencyRow::t_p99_ps, "ps", "`99% percentile`."),
      field("t_p999_ps", &PerftestLatencyRow::t_p999_ps, "ps", "`99.9% percentile`."),
  };
}

constexpr auto record_fields(std::type_identity<PerftestRun>) {
  using R = PerftestRun;
  return std::tuple{
      text("test", &R::test, 16, "The perftest tool, from the banner's title."),
      text("title", &R::title, 64, "The banner's title as printed, e.g. `RDMA_Write BW Test`."),
      field("bidirectional", &R::bidirectional, "0/1", "1 for a bidirectional test (`-b`)."),
      text("device", &R::device, 32, "`Device`: the RDMA device, e.g. `mlx5_0`."),
      text("link_type", &R::link_type, 16, "`Link type`: `Ethernet` (RoCE) or `IB`."),
      text("transport", &R::transport, 16, "`Transport type`."),
      text("connection", &R::connection, 16,
           "`Connection type`: `RC`, `UC`, `UD`, `XRC`, `DC`, `SRD`."),
      field("mtu_bytes", &R::mtu_bytes, "B",
            "`Mtu`. `-1` where the banner does not print it (here and below)."),
      field("gid_index", &R::gid_index, "", "`GID index` (RoCE)."),
      field("qps", &R::qps, "", "`Number of qps`."),
      field("tx_depth", &R::tx_depth, "", "`TX depth`."),
      field("inline_bytes", &R::inline_bytes, "B", "`Max inline data`."),
      field("cq_moderation", &R::cq_moderation, "", "`CQ Moderation`."),
      field("post_list", &R::post_list, "", "`Post List`."),
      field("outstanding_reads", &R::outstanding_reads, "",
            "`Outstand reads` (read and atomic tests)."),
      text("rdma_cm", &R::rdma_cm, 8, "`rdma_cm QPs`: `ON` or `OFF`."),
      text("data_exchange", &R::data_exchange, 16,
           "`Data ex. method`: `Ethernet` (TCP socket) or `rdma_cm`."),
      computed<R, std::string>(
          "local_lid", [](const R& r) { return r.local.lid; }, "",
          "Local queue pair: `LID` as printed (`0000` on RoCE).", 16),
      computed<R, std::string>(
          "local_qpn", [](const R& r) { return r.local.qpn; }, "",
          "Local `QPN`, hexadecimal as printed.", 16),
      computed<R, std::string>(
          "local_psn", [](const R& r) { return r.local.psn; }, "", "Local initial `PSN`.", 16),
      computed<R, std::string>(
          "local_gid", [](const R& r) { return r.local.gid; }, "",
          "Local `GID` as printed (RoCE: the IPv4-mapped address in its last four bytes); empty "
          "when not printed (InfiniBand).",
          48),
      computed<R, std::string>(
          "remote_lid", [](const R& r) { return r.remote.lid; }, "", "Remote `LID`.", 16),
      computed<R, std::string>(
          "remote_qpn", [](const R& r) { return r.remote.qpn; }, "", "Remote `QPN`.", 16),
      computed<R, std::string>(
          "remote_psn", [](const R& r) { return r.remote.psn; }, "", "Remote initial `PSN`.", 16),
      computed<R, std::string>(
          "remote_gid", [](const R& r) { return r.remote.gid; }, "", "Remote `GID`.", 48),
      text("bandwidth_unit", &R::bandwidth_unit, 8,
           "The unit the bandwidth table printed: `MB/sec`, `MiB/sec` or `Gb/sec`; empty for "
           "latency tests."),
  };
}

}  // namespace fabtwin::hw
