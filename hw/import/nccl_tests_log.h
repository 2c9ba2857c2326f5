// The output of the nccl-tests benchmarks (all_reduce_perf, all_gather_perf, ...) in every
// generation in use: the "# nThread ..." header, the "# Using devices" lines (with or without
// Group and PCI address), the out-of-place / in-place table with 11 (before the redop column),
// 12 (before the root column) or 13 columns, the error column as a number, a count or N/A, and
// the footer; and, when NCCL_DEBUG=INFO was set, NCCL's INFO and WARN lines, from which the
// NCCL version, the network, the communicator's size and the channel count are read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/record_field.h"

namespace fabtwin::hw {

// "#  Rank  3 Group  0 Pid   6902 on ztan-mig-235z device  3 [0000:0c:00] NVIDIA H100 80GB HBM3"
struct NcclTestsDevice {
  int32_t rank = 0;
  int32_t group = -1;  // -1 in logs without the Group field
  int64_t pid = 0;
  std::string host;
  int32_t device = 0;
  std::string bus;   // "0000:0c:00" or "0x00" as printed
  std::string name;  // the GPU model
};

// One line of the result table.
struct NcclTestsRow {
  int64_t size = 0;   // B
  int64_t count = 0;  // elements
  std::string type;
  std::string redop;  // empty in logs before the redop column
  int32_t root = -1;
  double time_us = 0, algbw = 0, busbw = 0;  // out-of-place
  std::string wrong;                         // out-of-place #wrong / error, as printed
  double in_place_time_us = 0, in_place_algbw = 0, in_place_busbw = 0;
  std::string in_place_wrong;
  int line = 0;
};

// An NCCL INFO or WARN line, as printed.
struct NcclInfoLine {
  uint32_t line = 0;
  std::string text;
};

struct NcclTestsLog {
  std::string program;        // "all_reduce_perf", from the log; empty when it does not say
  std::string tests_version;  // "# nccl-tests version 2.17.6 ..."; empty in older logs
  int64_t threads = -1, gpus_per_thread = -1, min_bytes = -1, max_bytes = -1;
  int64_t warmup_iterations = -1, iterations = -1, agg_iterations = -1, validation = -1;
  std::vector<NcclTestsDevice> devices;
  std::vector<NcclTestsRow> rows;
  std::string out_of_bounds;                // "0 OK"
  std::optional<double> avg_bus_bandwidth;  // GB/s, "# Avg bus bandwidth"
  // From NCCL's debug output, when present:
  std::string nccl_version;         // "2.26.5+cuda12.9"
  std::string network;              // "IB", "Socket", or a plugin's name
  std::string algorithm, protocol;  // "NCCL_ALGO/NCCL_PROTO set by environment to ...", lowercase
  int64_t nranks = -1, nnodes = -1, channels = -1;
  std::vector<NcclInfoLine> info;
};

// Reads an nccl-tests log; `name` starts every error message. Throws LogFormatError naming the
// line when a table line is malformed (a row of the wrong width, a word where a number belongs,
// an unknown line inside the table) or when the log holds no result row.
NcclTestsLog parse_nccl_tests_log(std::string_view text, const std::string& name);

// What one NCCL INFO line (or a bare "NCCL version ..." line) tells: the NCCL version, the
// network in use, nranks / nRanks and nNodes, the channel count, NCCL_ALGO / NCCL_PROTO set by
// the environment; recorded into `log` (the line itself is not stored here).
void read_nccl_debug_line(NcclTestsLog& log, std::string_view text);

// What NCCL's tuner chose for one collective call: its TUNING debug line (rank 0 prints it per
// call, "AllReduce: 1048576 Bytes -> Algo Ring proto Simple channel{Lo..Hi}={0..15}").
struct NcclTuningChoice {
  std::string function;  // NCCL's name: AllReduce, AllGather, ReduceScatter, Broadcast, Reduce
  int64_t bytes = 0;
  std::string algorithm;  // as printed: Ring, Tree, CollNetDirect, CollNetChain, NVLS, PAT, ...
  std::string protocol;   // LL, LL128, Simple
  int64_t channels = 0;   // Hi - Lo + 1
};

// The choice a TUNING line tells; nullopt for any other line.
std::optional<NcclTuningChoice> read_nccl_tuning_line(std::string_view text);

// The simulator's name of the collective an nccl-tests program runs: all_reduce_perf ->
// all_reduce, alltoall_perf -> all_to_all, sendrecv_perf -> send_recv; other programs by their
// name without "_perf". Empty for a name that is not an nccl-tests program.
std::string nccl_tests_op(const std::string& program);

constexpr auto record_fields(std::type_identity<NcclTestsDevice>) {
  using R = NcclTestsDevice;
  return std::tuple{
      field("rank", &R::rank, "", "Rank, as nccl-tests numbers them (`# Using devices`)."),
      field("group", &R::group, "", "nccl-tests' group; `-1` in logs without it."),
      field("pid", &R::pid, "", "Process id."),
      text("host", &R::host, 64, "Host name."),
      field("device", &R::device, "", "CUDA device index on that host."),
      text("bus", &R::bus, 16, "PCI address as printed (`0000:0c:00`, or `0x0c` in older logs)."),
      text("name", &R::name, 64, "GPU model, e.g. `NVIDIA H100 80GB HBM3`."),
  };
}

// /hw/nccl_tests: what the simulator does not model, per row of /collectives/results.
struct NcclTestsExtraRow {
  uint32_t result_index = 0;
  std::string wrong;
  double in_place_time_us = 0, in_place_algbw = 0, in_place_busbw = 0;
  std::string in_place_wrong;
  uint32_t line = 0;
};

constexpr auto record_fields(std::type_identity<NcclTestsExtraRow>) {
  using R = NcclTestsExtraRow;
  return std::tuple{
      field("result_index", &R::result_index, "", "Row of `/collectives/results`."),
      text("wrong", &R::wrong, 16,
           "Out-of-place `#wrong` as printed: a count of wrong elements, `N/A` without checking "
           "(`-c 0`), or the maximum error (`0e+00`) in logs before the count."),
      field("in_place_time_us", &R::in_place_time_us, "µs", "In-place time of one iteration."),
      field("in_place_algbw", &R::in_place_algbw, "GB/s", "In-place `algbw`."),
      field("in_place_busbw", &R::in_place_busbw, "GB/s", "In-place `busbw`."),
      text("in_place_wrong", &R::in_place_wrong, 16, "In-place `#wrong`, as `wrong`."),
      field("line", &R::line, "", "Line of the log the row was read from."),
  };
}

constexpr auto record_fields(std::type_identity<NcclInfoLine>) {
  return std::tuple{
      field("line", &NcclInfoLine::line, "", "Line of the log."),
      text("text", &NcclInfoLine::text, 256,
           "The NCCL INFO or WARN line as printed (longer lines cut at 256 bytes)."),
  };
}

}  // namespace fabtwin::hw
