// Everything a run produces, gathered after the last event: the input to the summary, the
// JSON report and the HDF5 file.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/collectives/collective_result.h"
#include "models/fabric/deadlock_records.h"
#include "models/net/egress_port.h"
#include "models/traffic/flow.h"
#include "sim/record_field.h"

namespace fabtwin {

// A port's counters at its eight priorities, held only when some counter is not zero: a large
// fabric's result lists every port, most of them idle in a short run, and eight priorities'
// counters take 1.3 kB. Reads of an idle port give zeros; a write makes the port hold them.
class PortCounters {
 public:
  using value_type = PriorityCounters;
  using Array = std::array<PriorityCounters, kPriorities>;

  PortCounters() = default;
  PortCounters(const PortCounters& o) : all_(o.all_ ? std::make_unique<Array>(*o.all_) : nullptr) {}
  PortCounters(PortCounters&&) noexcept = default;
  PortCounters& operator=(const PortCounters& o) {
    if (this != &o) all_ = o.all_ ? std::make_unique<Array>(*o.all_) : nullptr;
    return *this;
  }
  PortCounters& operator=(PortCounters&&) noexcept = default;
  // Takes a port's counters (held only if one is not zero).
  PortCounters& operator=(const Array& counters);

  static constexpr size_t size() { return kPriorities; }
  const PriorityCounters& operator[](size_t priority) const {
    return all_ ? (*all_)[priority] : zeros()[priority];
  }
  PriorityCounters& operator[](size_t priority) {
    if (!all_) all_ = std::make_unique<Array>();
    return (*all_)[priority];
  }
  Array::const_iterator begin() const { return all_ ? all_->begin() : zeros().begin(); }
  Array::const_iterator end() const { return all_ ? all_->end() : zeros().end(); }
  // Whether the counters are held (some counter was not zero, or one was written).
  bool held() const { return all_ != nullptr; }

 private:
  static const Array& zeros();
  std::unique_ptr<Array> all_;
};
template <>
struct is_record_array<PortCounters> : std::true_type {};

struct PortRecord {
  std::string node;  // node name
  bool switch_port = false;
  uint32_t port = 0;
  std::string peer;  // node at the other end
  std::string link;  // tiers of the two ends, this one first: "leaf->spine"
  BitsPerSec rate{};
  Time busy_time{};  // time spent serializing frames
  PortCounters counters;

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

constexpr auto record_fields(std::type_identity<PortRecord>) {
  return std::tuple{
      text("node", &PortRecord::node, 32,
           "Name of the node that owns the port (`host3`, `leaf0`, `spine2`, ...)."),
      field("port", &PortRecord::port, "", "Port number on that node."),
      text("peer", &PortRecord::peer, 32, "Name of the node at the other end of the link."),
      text("link", &PortRecord::link, 16,
           "Tiers of the link's ends, this port's first: `leaf->spine`, `spine->core`, "
           "`core->spine`, `spine->leaf`, `leaf->host`, `host->leaf` (the groups of "
           "`/link_utilization`)."),
      field("is_switch", &PortRecord::switch_port, "0/1",
            "1 for a switch port, 0 for a host NIC port."),
      field("rate_bps", &PortRecord::rate, "b/s", "Line rate of the link."),
      field("busy_ps", &PortRecord::busy_time, "ps",
            "Time spent serializing frames (including preamble and inter-frame gap); "
            "`busy_ps / last_event_time_ps` is the utilization.",
            Merge::Sum),
      field("counters", &PortRecord::counters, "", "the port's eight priorities"),
  };
}

struct PauseRecord {
  uint32_t port;  // index into RunResult::ports: the egress that was paused
  uint8_t priority;
  Time start;
  Time end;
};

constexpr auto record_fields(std::type_identity<PauseRecord>) {
  return std::tuple{
      field("port_index", &PauseRecord::port, "",
            "Row of `/ports`: the egress port that was **paused** (the upstream end of the link, "
            "not the port that sent the XOFF)."),
      field("priority", &PauseRecord::priority, "", "Priority that was paused, 0..7."),
      field("start_ps", &PauseRecord::start, "ps",
            "Time the pause took effect (the XOFF frame arrived)."),
      field("end_ps", &PauseRecord::end, "ps",
            "Time the port could send that priority again; `end_ps >= start_ps`."),
  };
}

struct BufferRecord {
  std::string node;
  int64_t buffer = 0;       // configured total
  int64_t shared_pool = 0;  // total less reserves and lossless headroom
  int64_t headroom = 0;     // per lossless group, largest over the ports
  int64_t max_used = 0;     // peak occupancy
  int64_t headroom_overflows = 0;
};

constexpr auto record_fields(std::type_identity<BufferRecord>) {
  return std::tuple{
      text("node", &BufferRecord::node, 32,
           "Name of the switch (`switch`, `leaf0`, `spine1`, ...)."),
      field("buffer_bytes", &BufferRecord::buffer, "B",
            "Configured packet buffer (`fabric.switch.buffer`)."),
      field("shared_pool_bytes", &BufferRecord::shared_pool, "B",
            "What is left for the shared pool after the reserves (`reserve` x 8 groups x ports) "
            "and the PFC headroom of every lossless group are set aside."),
      field("headroom_bytes", &BufferRecord::headroom, "B",
            "PFC headroom of one lossless (ingress port, priority) group; the largest over the "
            "switch's ports when they differ (automatic headroom depends on each link's rate and "
            "delay). Reported even with PFC off, when nothing is set aside for it."),
      field("max_used_bytes", &BufferRecord::max_used, "B",
            "Peak occupancy of the whole buffer (reserved, shared and headroom bytes together).",
            Merge::Max),
      field("headroom_overflows", &BufferRecord::headroom_overflows, "packets",
            "Lossless frames dropped at this switch because the headroom was full: the sum of its "
            "ports' `drops_headroom`.",
            Merge::Sum),
  };
}

struct RateSampleRecord {
  Time time;
  uint32_t flow;
  int64_t rate_bps;
  int64_t target_bps;
  double alpha;
};

constexpr auto record_fields(std::type_identity<RateSampleRecord>) {
  return std::tuple{
      field("time_ps", &RateSampleRecord::time, "ps", "Simulated time of the sample."),
      field("flow", &RateSampleRecord::flow, "",
            "Flow id (`/flows.id`); one flow is one send queue pair."),
      field("rate_bps", &RateSampleRecord::rate_bps, "b/s",
            "Current rate R_C the NIC paces the queue pair at, as a wire rate (frames plus "
            "preamble and inter-frame gap), truncated to whole b/s. Never above the source's link "
            "rate; equal to it when the queue pair is not throttled."),
      field("target_bps", &RateSampleRecord::target_bps, "b/s",
            "Target rate R_T that rate increases move R_C toward."),
      field("alpha", &RateSampleRecord::alpha, "",
            "DCQCN's congestion estimate α, in [0, 1], as of `time_ps` (decay owed since its last "
            "update applied). Before the first CNP it is `initial_alpha_value`/1024."),
  };
}

struct BufferSampleRecord {
  Time time;
  uint32_t buffer;  // index into RunResult::buffers
  int64_t bytes;
};

constexpr auto record_fields(std::type_identity<BufferSampleRecord>) {
  return std::tuple{
      field("time_ps", &BufferSampleRecord::time, "ps", "Simulated time of the sample."),
      field("buffer_index", &BufferSampleRecord::buffer, "", "Row of `/buffers`."),
      field("bytes", &BufferSampleRecord::bytes, "B",
            "Frame bytes held in the switch's buffer (reserved, shared and headroom together)."),
  };
}

struct QueueDepthSample {
  Time time;
  uint32_t port;  // index into RunResult::ports
  int64_t bytes;
};

constexpr auto record_fields(std::type_identity<QueueDepthSample>) {
  return std::tuple{
      field("time_ps", &QueueDepthSample::time, "ps", "Simulated time of the sample."),
      field("port_index", &QueueDepthSample::port, "", "Row of `/ports`."),
      field("bytes", &QueueDepthSample::bytes, "B",
            "Frame bytes waiting in the port's queues, all priorities together."),
  };
}

// The utilization of one switch egress (one direction of a link) over a sampling interval.
struct LinkUtilizationSample {
  Time time;
  uint32_t port;       // index into RunResult::ports
  double utilization;  // fraction of (previous sample, time] spent transmitting
};

constexpr auto record_fields(std::type_identity<LinkUtilizationSample>) {
  return std::tuple{
      field("time_ps", &LinkUtilizationSample::time, "ps",
            "End of the sampling interval (the sample's time)."),
      field("port_index", &LinkUtilizationSample::port, "", "Row of `/ports`."),
      field("utilization", &LinkUtilizationSample::utilization, "",
            "Fraction of the interval since the port's previous sample (or since 0) it spent "
            "transmitting frames, preamble and gap included: 0..1."),
  };
}

// A link that failed or recovered (scenario `events`).
struct LinkEventRecord {
  Time time;
  std::string a, b;  // the link's ends
  bool up = false;
};

constexpr auto record_fields(std::type_identity<LinkEventRecord>) {
  return std::tuple{
      field("time_ps", &LinkEventRecord::time, "ps", "When the link failed or recovered."),
      text("a", &LinkEventRecord::a, 32, "One end of the link (node name)."),
      text("b", &LinkEventRecord::b, 32, "The other end."),
      field("up", &LinkEventRecord::up, "0/1", "1: the link came up; 0: it went down."),
  };
}

// A host pair without a route from `from` until the next route change (or the end).
struct UnreachableRecord {
  Time from;
  uint32_t src = 0, dst = 0;  // host indices
};

constexpr auto record_fields(std::type_identity<UnreachableRecord>) {
  return std::tuple{
      field("from_ps", &UnreachableRecord::from, "ps",
            "From when (0: the initial routes; else when the routes after a link event are in "
            "place) until the next row's time for the same pair, or the end."),
      field("src_host", &UnreachableRecord::src, "", "Source host index (`/flows.src`)."),
      field("dst_host", &UnreachableRecord::dst, "", "Destination host index with no route."),
  };
}

struct RunResult {
  std::string scenario_text;  // merged scenario, as run
  std::string scenario_file;
  std::vector<std::string> warnings;  // the scenario's costly settings (FabricSpec::warnings)
  uint64_t seed = 0;
  uint64_t fingerprint = 0;
  uint64_t events = 0;
  Time end_time{};  // the configured end
  Time last_event_time{};
  bool reached_end = false;  // stopped at end with work pending
  std::string stop_reason;   // "deadlock" when the detector stopped the run, else empty
  Time stop_time{};          // the checkpoint it stopped at
  double wall_seconds = 0;   // wall clock (the only non-deterministic figure)
  // The event loop's CPU time, every thread of the process together (getrusage), in user mode
  // and in the kernel; like wall time, not part of the results. The kernel's share is mostly the
  // first touch of memory the run grows into: on a virtual machine whose host backs the guest's
  // memory lazily it varies run to run (docs/performance.md, "What the host adds").
  double cpu_user_seconds = 0;
  double cpu_system_seconds = 0;
  std::string run_id;  // one invocation's files share it (set by whoever writes them)
  int threads = 1;     // engine figures, like wall time: not part of the results
  int partitions = 1;
  std::string partitioner = "bfs";  // the cut that ran (run.partitioner, or bfs as its fallback)
  int cut_links = 0;                // links between partitions
  Time window = Time::max();        // the lookahead: how far past the earliest event a window ends
  bool node_nics_together = false;  // GPU nodes with their NICs (else each NIC with its switch)
  Time burst_window{};              // each component's events of a window ran together (0: not)
  uint64_t taken_events = 0;  // run by a thread that took their burst from another partition's
  int64_t data_packets_sent = 0;
  int64_t peak_packets_in_pool = 0;
  std::string topology;
  int hosts = 0;
  int switches = 0;
  std::string routing;        // routing.algorithm
  int64_t flowlet_moves = 0;  // flowlets that left on another port than their flow's last
  std::string routing_strategy = "ecmp";  // routing.strategy, "+ rules" with strategies
  std::vector<LinkEventRecord> link_events;
  int64_t route_updates = 0;  // tables installed after link events (one per switch and time)
  std::vector<UnreachableRecord> unreachable;
  std::vector<FlowRecord> flows;
  std::vector<PortRecord> ports;
  std::vector<QueueDepthSample> queue_samples;
  std::vector<LinkUtilizationSample> link_samples;  // at the queue samples' times
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
  DeadlockReport deadlock;  // what the runtime deadlock detector found
  std::vector<CollectiveStepRecord>
      collective_steps;  // by (row, iteration, rank, channel, lane, start)
  std::vector<CollectiveTransferRecord>
      collective_transfers;  // by (row, iteration, posted, channel, src)
};

}  // namespace fabtwin
