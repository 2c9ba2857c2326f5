// Everything a run produces, gathered after the last event: the input to the summary, the
// JSON report and the HDF5 file.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "models/collectives/collective_result.h"
#include "models/net/egress_port.h"
#include "models/traffic/flow.h"

namespace fabtwin {

struct PortRecord {
  std::string node;  // node name
  bool switch_port = false;
  uint32_t port = 0;
  std::string peer;  // node at the other end
  BitsPerSec rate{};
  Time busy_time{};  // time spent serializing frames
  std::array<PriorityCounters, kPriorities> counters{};

  int64_t tx_packets() const;
  int64_t tx_bytes() const;
  int64_t drops() const;
  int64_t max_queue_bytes() const;  // deepest single priority queue
  // Sum of one counter over the eight priorities.
  template <typename Field>
  Field total(Field PriorityCounters::*field) const {
    Field sum{};
    for (const PriorityCounters& c : counters) sum += c.*field;
    return sum;
  }
};

struct PauseRecord {
  uint32_t port;  // index into RunResult::ports: the egress that was paused
  uint8_t priority;
  Time start;
  Time end;
};

struct BufferRecord {
  std::string node;
  int64_t buffer = 0;       // configured total
  int64_t shared_pool = 0;  // total less reserves and lossless headroom
  int64_t headroom = 0;     // per lossless group, largest over the ports
  int64_t max_used = 0;     // peak occupancy
  int64_t headroom_overflows = 0;
};

struct RateSampleRecord {
  Time time;
  uint32_t flow;
  int64_t rate_bps;
  int64_t target_bps;
  double alpha;
};

struct BufferSampleRecord {
  Time time;
  uint32_t buffer;  // index into RunResult::buffers
  int64_t bytes;
};

struct QueueDepthSample {
  Time time;
  uint32_t port;  // index into RunResult::ports
  int64_t bytes;
};

struct RunResult {
  std::string scenario_text;  // merged scenario, as run
  std::string scenario_file;
  uint64_t seed = 0;
  uint64_t fingerprint = 0;
  uint64_t events = 0;
  Time end_time{};  // the configured end
  Time last_event_time{};
  bool reached_end = false;  // stopped at end with work pending
  double wall_seconds = 0;   // wall clock (the only non-deterministic figure)
  int threads = 1;           // engine figures, like wall time: not part of the results
  int partitions = 1;
  int64_t data_packets_sent = 0;
  int64_t peak_packets_in_pool = 0;
  std::string topology;
  int hosts = 0;
  int switches = 0;
  std::vector<FlowRecord> flows;
  std::vector<PortRecord> ports;
  std::vector<QueueDepthSample> queue_samples;
  std::vector<PauseRecord> pauses;
  std::vector<BufferRecord> buffers;
  std::vector<BufferSampleRecord> buffer_samples;
  std::string congestion_control;    // "none" or "dcqcn (PROFILE)"
  int64_t connection_rate_cuts = 0;  // collectives' QPs (flows count theirs in FlowRecord)
  std::vector<RateSampleRecord> rate_samples;
  // GPUs (rank r of a collective is gpus index CollectiveRow::gpus[r]) and NCCL collectives.
  std::vector<std::string> gpus;  // "node3/gpu5"
  std::vector<CollectiveRow> collectives;
  std::vector<CollectiveIterationRecord> collective_iterations;  // by (row, iteration, rank)
  std::vector<CollectiveStepRecord>
      collective_steps;  // by (row, iteration, rank, channel, lane, start)
  std::vector<CollectiveTransferRecord>
      collective_transfers;  // by (row, iteration, posted, channel, src)
};

}  // namespace fabtwin
