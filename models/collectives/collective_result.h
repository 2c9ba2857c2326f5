// What a simulated NCCL collective produced: one row per (generator, size) in nccl-tests'
// terms, and the timeline beneath it (every slice each rank's channel processed, every transfer
// on every connection), for the summary table, `--json`, HDF5 and the Perfetto trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/record_field.h"
#include "sim/units.h"

namespace fabtwin {

// One line of an nccl-tests table (out-of-place; the simulator moves no data, so in-place
// would be the same traffic and is not run).
struct CollectiveRow {
  uint32_t generator = 0;  // index of the `traffic` entry that asked for it
  std::string op;          // all_reduce, all_gather, reduce_scatter, broadcast, reduce,
                           // all_to_all, send_recv
  std::string algorithm;   // ring, tree or p2p (all_to_all, send_recv), as run (never "auto")
  std::string protocol;    // Simple
  int64_t size = 0;        // bytes: nccl-tests' "size" column, max(send, receive) per rank
  int64_t count = 0;       // elements: nccl-tests' "count" column
  std::string type;        // element type: float, half, ...
  std::string redop;       // sum, prod, max, min, avg
  int root = -1;           // -1 for rootless collectives
  int ranks = 0;
  std::vector<uint32_t> gpus;  // rank -> index into RunResult::gpus
  int channels = 0;
  int iterations = 0;  // timed iterations (warm-up excluded)
  double time_us = 0;  // per iteration, averaged over ranks (nccl-tests -a 1)
  double algbw = 0;    // GB/s (1e9 B/s)
  double busbw = 0;    // GB/s, algbw x nccl-tests' bus factor for the op
  Time start{};        // earliest rank's start of the first timed iteration
  Time end{};          // latest rank's end of the last timed iteration
};

// The redop column: nccl-tests prints "none" for the collectives that do not reduce
// (all_gather, broadcast, alltoall, sendrecv).
inline std::string nccl_redop_text(const std::string& op, const std::string& redop) {
  const bool reduces = op == "all_reduce" || op == "reduce_scatter" || op == "reduce" || op.empty();
  return reduces && !redop.empty() ? redop : "none";
}

constexpr auto record_fields(std::type_identity<CollectiveRow>) {
  return std::tuple{
      field("generator", &CollectiveRow::generator, "",
            "Index of the scenario's `traffic` entry that asked for it."),
      text("op", &CollectiveRow::op, 16,
           "`all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`, `reduce`, `all_to_all` or "
           "`send_recv`."),
      text("algorithm", &CollectiveRow::algorithm, 16,
           "NCCL algorithm as run: `ring`, `tree`, or `p2p` for the point-to-point operations "
           "(all-to-all, send/receive); never `auto`: the tuning model's choice is written."),
      text("protocol", &CollectiveRow::protocol, 16, "NCCL protocol: `Simple`."),
      field("size", &CollectiveRow::size, "B",
            "nccl-tests' `size` column: bytes per rank, the larger of send and receive buffer."),
      field("count", &CollectiveRow::count, "elements", "nccl-tests' `count` column."),
      text("type", &CollectiveRow::type, 16, "Element type: `float`, `half`, `bfloat16`, ..."),
      computed<CollectiveRow, std::string>(
          "redop", [](const CollectiveRow& c) { return nccl_redop_text(c.op, c.redop); }, "",
          "Reduction: `sum`, `prod`, `max`, `min`, `avg`; `none` for the collectives that do not "
          "reduce (all-gather, broadcast, all-to-all, send/receive), as nccl-tests prints it.",
          16),
      field("root", &CollectiveRow::root, "", "Root rank; `-1` for rootless collectives."),
      field("ranks", &CollectiveRow::ranks, "", "Ranks in the communicator."),
      field("channels", &CollectiveRow::channels, "", "NCCL channels used."),
      field("iterations", &CollectiveRow::iterations, "",
            "Timed iterations (warm-up not counted)."),
      field("time_us", &CollectiveRow::time_us, "µs",
            "Time of one iteration, averaged over the ranks (nccl-tests' default `-a 1`)."),
      field("algbw", &CollectiveRow::algbw, "GB/s",
            "`size / time_us`, in 10^9 B/s (nccl-tests' `algbw`)."),
      field("busbw", &CollectiveRow::busbw, "GB/s",
            "`algbw` times nccl-tests' bus factor for the op: 2(n−1)/n for all-reduce, (n−1)/n "
            "for all-gather, reduce-scatter and all-to-all, 1 for broadcast, reduce and "
            "send/receive."),
      field("start_ps", &CollectiveRow::start, "ps",
            "Start of the first timed iteration on the earliest rank."),
      field("end_ps", &CollectiveRow::end, "ps",
            "End of the last timed iteration on the latest rank."),
  };
}

enum class CollectiveTransport : uint8_t { None = 0, NvLink = 1, Net = 2 };

// One unit of work of one rank's channel: receive (and reduce or copy) one slice and/or send
// it on. `start` is when its inputs and buffer credits were all present and the channel's GPU
// work began; `end` is when that work finished and the send was posted.
struct CollectiveStepRecord {
  uint32_t row = 0;        // index into RunResult::collectives
  uint32_t iteration = 0;  // 0-based, warm-up iterations first
  uint32_t rank = 0;
  uint16_t channel = 0;
  uint16_t lane = 0;       // 0; tree all-reduce: 0 = reduce up, 1 = broadcast down
  uint32_t step = 0;       // NCCL step within the channel's loop sequence
  int32_t recv_peer = -1;  // rank it received from (the first, for tree reductions)
  int32_t send_peer = -1;  // rank it sent to (the first, for tree broadcasts)
  int64_t bytes = 0;
  Time start{};
  Time end{};
};

constexpr auto record_fields(std::type_identity<CollectiveStepRecord>) {
  return std::tuple{
      field("result_index", &CollectiveStepRecord::row, "", "Row of `/collectives/results`."),
      field("iteration", &CollectiveStepRecord::iteration, "",
            "0-based, warm-up first: with W warm-up iterations, `0..W-1` are warm-up and the next "
            "`results.iterations` the timed ones."),
      field("rank", &CollectiveStepRecord::rank, "", "Rank whose channel did the work."),
      field("channel", &CollectiveStepRecord::channel, "", "NCCL channel."),
      field("lane", &CollectiveStepRecord::lane, "",
            "0; for tree all-reduce, 0 is the reduction up the tree and 1 the broadcast down."),
      field("step", &CollectiveStepRecord::step, "", "NCCL step number within the channel's loop."),
      field("recv_peer", &CollectiveStepRecord::recv_peer, "",
            "Rank it received from (the first child, for tree reductions); `-1` if it received "
            "nothing."),
      field("send_peer", &CollectiveStepRecord::send_peer, "",
            "Rank it sent to (the first child, for tree broadcasts); `-1` if it sent nothing."),
      field("bytes", &CollectiveStepRecord::bytes, "B", "Bytes of the slice."),
      field("start_ps", &CollectiveStepRecord::start, "ps",
            "When its inputs and buffer credits were all present and the GPU work began."),
      field("end_ps", &CollectiveStepRecord::end, "ps",
            "When the GPU work finished and the send was posted."),
  };
}

// One iteration of one rank (warm-up included): from its launch to the end of its last lane.
struct CollectiveIterationRecord {
  uint32_t row = 0;
  uint32_t iteration = 0;
  uint32_t rank = 0;
  Time start{};
  Time end{};
};

constexpr auto record_fields(std::type_identity<CollectiveIterationRecord>) {
  return std::tuple{
      field("result_index", &CollectiveIterationRecord::row, "", "Row of `/collectives/results`."),
      field("iteration", &CollectiveIterationRecord::iteration, "", "As in `/collectives/steps`."),
      field("rank", &CollectiveIterationRecord::rank, "", "The rank."),
      field("start_ps", &CollectiveIterationRecord::start, "ps",
            "When the rank launched the iteration (before `nccl.base_latency`)."),
      field("end_ps", &CollectiveIterationRecord::end, "ps",
            "When the last of its channels' work for the iteration finished."),
  };
}

// One message on one connection, until it is complete at the receiver's GPU. `posted`: over
// NVLink, when the sender's kernel began writing it into the peer's buffer; over the network,
// when the sender's kernel handed it to the proxy (which posts it to the NIC after
// nccl.net_step_latency and a PCIe crossing).
struct CollectiveTransferRecord {
  uint32_t row = 0;
  uint32_t iteration = 0;
  uint16_t channel = 0;
  CollectiveTransport transport = CollectiveTransport::None;
  uint32_t src_rank = 0;
  uint32_t dst_rank = 0;
  int64_t bytes = 0;
  Time posted{};
  Time arrived{};
};

constexpr auto record_fields(std::type_identity<CollectiveTransferRecord>) {
  return std::tuple{
      field("result_index", &CollectiveTransferRecord::row, "", "Row of `/collectives/results`."),
      field("iteration", &CollectiveTransferRecord::iteration, "", "As in `/collectives/steps`."),
      field("channel", &CollectiveTransferRecord::channel, "", "NCCL channel."),
      field("transport", &CollectiveTransferRecord::transport, "",
            "How it travelled: `1` NVLink (inside a node), `2` network (RoCE through the "
            "simulated fabric), `0` none."),
      field("src_rank", &CollectiveTransferRecord::src_rank, "", "Sending rank."),
      field("dst_rank", &CollectiveTransferRecord::dst_rank, "", "Receiving rank."),
      field("bytes", &CollectiveTransferRecord::bytes, "B", "Message size."),
      field("posted_ps", &CollectiveTransferRecord::posted, "ps", "When the sender posted it."),
      field("arrived_ps", &CollectiveTransferRecord::arrived, "ps",
            "When it was complete at the receiving GPU."),
  };
}

}  // namespace fabtwin
