// What a simulated NCCL collective produced: one row per (generator, size) in nccl-tests'
// terms, and the timeline beneath it (every slice each rank's channel processed, every transfer
// on every connection), for the summary table, `--json`, HDF5 and the Perfetto trace.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

// One iteration of one rank (warm-up included): from its launch to the end of its last lane.
struct CollectiveIterationRecord {
  uint32_t row = 0;
  uint32_t iteration = 0;
  uint32_t rank = 0;
  Time start{};
  Time end{};
};

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

}  // namespace fabtwin
