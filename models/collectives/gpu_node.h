// A GPU node running NCCL: its GPUs' channels work through their plans slice by slice, moving
// data over NVLink inside the node (a rate and a latency per GPU) and through the node's NICs
// between nodes (posting RDMA writes on connection QPs after the proxy's overhead and a PCIe
// crossing). Each connection has NCCL's buffer slots: a sender waits for a free slot at the
// receiver, which hands it back once its GPU has consumed the slice. Ranks run their
// iterations back to back; between sizes all ranks meet in a barrier, as in nccl-tests.
#pragma once

#include <memory>
#include <vector>

#include "models/collectives/collective.h"
#include "models/collectives/collective_result.h"
#include "sim/simulator.h"

namespace fabtwin {

// When one rank ran one size: from the launch of its first timed iteration to the end of its
// last.
struct RankTiming {
  uint32_t op = 0;  // index into CollectiveSetup::ops
  uint32_t rank = 0;
  Time start{}, end{};
};

// A network message as the sender posted it, to be joined with its arrival.
struct NetMessage {
  uint32_t connection = 0;
  uint32_t sequence = 0;
  uint32_t op = 0, iteration = 0;
  int64_t bytes = 0;
  Time time{};  // posted (sender) or arrived (receiver)
};

// What a GPU node recorded during a run (its own ranks only).
struct GpuNodeRecords {
  std::vector<RankTiming> timings;
  std::vector<CollectiveIterationRecord> iterations;
  std::vector<CollectiveStepRecord> steps;
  std::vector<CollectiveTransferRecord> nvlink;  // complete: both ends are on the node
  std::vector<NetMessage> posted, arrived;       // network messages, joined after the run

  void append(const GpuNodeRecords& other);
};

class GpuNode final : public Component {
 public:
  // `node`: GPU node index; `nodes`: component id of every GPU node (by node index);
  // `nics`: component id of each NIC of this node.
  GpuNode(std::string name, int node, const CollectiveSetup& setup, const Topology& topology,
          std::vector<ComponentId> node_components, std::vector<ComponentId> nics);
  ~GpuNode() override;

  void handle(const Event& e) override;
  // Schedules the first size of every collective this node takes part in.
  void begin();

  const GpuNodeRecords& records() const { return records_; }

 private:
  struct Stream;
  struct LaneState;
  void start_op(Stream& s, size_t position);
  void launch(Stream& s, int slot);
  void try_start(uint32_t stream, uint32_t lane);
  void finish_unit(uint32_t stream, uint32_t lane);
  void lane_done(Stream& s, uint32_t lane);
  void rank_done(Stream& s, int slot);
  void wake(int64_t waiter);
  void message_arrived(uint32_t connection, uint32_t sequence);
  void barrier(uint32_t spec, uint32_t position);

  int node_;
  const CollectiveSetup& setup_;
  const Topology& topology_;
  std::vector<ComponentId> node_components_;
  std::vector<ComponentId> nics_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<int> stream_of_spec_;  // -1: no rank here

  // Per connection, the sender's and the receiver's view (used only where this node is one).
  struct SendSide {
    int64_t posted = 0, credited = 0, acked = 0;
    int64_t waiter = -1;         // stream << 32 | lane waiting for a slot
    std::vector<int64_t> parts;  // messages split over QPs: parts acknowledged on each QP
  };
  struct RecvSide {
    int64_t arrived = 0, consumed = 0;  // messages complete in order, consumed by the GPU
    uint64_t early = 0;                 // bit i: message `arrived + i` is already here
    int64_t waiter = -1;                // stream << 32 | lane waiting for a message
    std::vector<int64_t> parts;         // messages split over QPs: parts arrived on each QP
  };
  // A message split over the QPs of a connection (nccl.ib_split_data_on_qps) is whole when
  // every QP has its part: the count of messages whole, after one more part on the QP of
  // `sequence` (message * QPs + QP, as the NIC numbers them).
  static int64_t whole_messages(std::vector<int64_t>& parts, uint64_t sequence);
  std::vector<SendSide> send_;
  std::vector<RecvSide> recv_;
  std::vector<Time> nvlink_free_;   // per local GPU: when its NVLink egress is free
  std::vector<int> barrier_count_;  // [spec] coordinator: nodes arrived at the current barrier

  GpuNodeRecords records_;
};

}  // namespace fabtwin
