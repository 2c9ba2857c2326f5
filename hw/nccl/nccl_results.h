// What an nccl-tests-like run of the scenario's collective generators measured, in the
// simulator's schema: one /collectives/results row per (generator, size), like a simulated run
// and like `fabtwin import nccl-tests`, each time averaged over the ranks (nccl-tests' default
// `-a 1`), algbw = size / time and busbw = algbw x nccl-tests' bus factor for the op
// (models/collectives/nccl_plan.h); NCCL's chosen algorithm, protocol and channels taken from
// its TUNING debug lines, and its INFO lines kept for /hw/nccl_info. Nothing here needs CUDA:
// the runner (nccl_collectives.h) measures, this assembles.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/import/nccl_tests_log.h"
#include "models/collectives/collective.h"
#include "sim/cli/collective_rows.h"

namespace fabtwin::hw {

// One rank's time for one row: seconds per iteration of the timed loop (host steady clock
// around `iterations` launches and the stream's completion).
struct NcclRankTime {
  uint32_t result_index = 0;
  uint32_t rank = 0;
  double time_us = 0;
};

constexpr auto record_fields(std::type_identity<NcclRankTime>) {
  return std::tuple{
      field("result_index", &NcclRankTime::result_index, "", "Row of `/collectives/results`."),
      field("rank", &NcclRankTime::rank, "", "Rank in the communicator."),
      field("time_us", &NcclRankTime::time_us, "µs",
            "That rank's time of one iteration (host steady clock around the timed launches "
            "and the stream's completion, divided by the iterations)."),
  };
}

// Everything a collective run gives rank 0 (the other ranks get their own times only).
struct CollectiveMeasurement {
  std::vector<CollectiveRow> rows;       // /collectives/results
  std::vector<RankGpuRow> rank_gpus;     // /collectives/rank_gpus
  std::vector<GpuRow> gpus;              // /collectives/gpus: "HOST/gpuD" per rank
  std::vector<NcclRankTime> rank_times;  // /hw/nccl_rank_times
  std::vector<NcclInfoLine> nccl_info;   // /hw/nccl_info: rank 0's NCCL INFO and WARN lines
  std::string nccl_version;              // ncclGetVersion, "2.28.9"
  std::string network;                   // "IB", "Socket", from the debug lines

  nlohmann::json to_json() const;  // the rows, for --json reports
};

// nccl-tests' NCCL function name of an op (AllReduce, ...); SendRecv for the point-to-point
// ops, which NCCL does not tune like collectives.
const char* nccl_function_name(nccl::Op op);

// The NCCL debug file's text read: its INFO and WARN lines (line numbers of the file), what
// read_nccl_debug_line gathers from them (version, network, channels) and every TUNING choice.
struct NcclDebugCapture {
  NcclTestsLog log;  // nccl_version, network, nranks, channels, info
  std::vector<NcclTuningChoice> choices;
};
NcclDebugCapture read_nccl_debug_text(std::string_view text);

// The row of `spec` at `size` from every rank's time (µs per iteration, in rank order), and
// NCCL's choice when its TUNING line was captured (the last choice for the op's function and
// byte count; p2p for all-to-all and send/receive; "unknown" when none was printed).
CollectiveRow nccl_result_row(const CollectiveSpec& spec, int64_t size,
                              const std::vector<double>& rank_time_us,
                              const std::vector<NcclTuningChoice>& choices);

// nccl-tests' buffer element counts of one call: what each rank sends and receives.
struct NcclCallCounts {
  int64_t send_count = 0, recv_count = 0;  // elements of the send and receive buffers
  int64_t call_count = 0;                  // the count argument of the NCCL call (per peer
                                           // for all-to-all)
};
NcclCallCounts nccl_call_counts(nccl::Op op, int64_t size, int type_bytes, int ranks);

}  // namespace fabtwin::hw
