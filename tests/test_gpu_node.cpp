// GPU nodes driven by scripted NICs: each NIC answers a posted message (kNicPostMessage) with
// its arrival at the receiving node and its acknowledgement at the sending node, after fixed
// latencies, so a collective's step times can be worked out by hand.
#include <cmath>
#include <vector>

#include "models/collectives/gpu_node.h"
#include "models/fabric/fabric.h"
#include "models/nic/host_nic.h"
#include "test_support.h"

using namespace fabtwin;

namespace {

constexpr Time kArrive = microseconds(3);  // a posted message is at the receiver this much later
constexpr Time kAck = microseconds(5);     // and acknowledged at the sender this much later

struct Posted {
  Time time;
  uint32_t connection;
  int64_t bytes;
};

class ScriptedNic final : public Component {
 public:
  ScriptedNic(int host, const CollectiveSetup& setup, const Topology& topology,
              std::vector<ComponentId> node_components)
      : Component("nic" + std::to_string(host)),
        host_(host),
        setup_(setup),
        topology_(topology),
        node_components_(std::move(node_components)),
        sequence_(setup.connections.size(), 0) {}

  std::vector<Posted> posted;

  void handle(const Event& e) override {
    REQUIRE(kind_handler(e.kind) == kNicPostMessage);
    const auto qp = static_cast<uint32_t>(e.data >> 40);
    const auto bytes = static_cast<int64_t>(e.data & ((uint64_t{1} << 40) - 1));
    for (uint32_t id = 0; id < setup_.connections.size(); ++id) {
      const CollectiveConnection& c = setup_.connections[id];
      if (c.src_host != host_ || c.send_qps.front() != qp) continue;
      posted.push_back({now(), id, bytes});
      const uint64_t data = uint64_t{id} << 32 | sequence_[id]++;
      schedule(now() + kArrive, node_components_[topology_.node_of_host(c.dst_host)],
               kNicMessageArrived, data);
      schedule(now() + kAck, node_components_[topology_.node_of_host(c.src_host)], kNicMessageAcked,
               data);
      return;
    }
    FAIL("a message posted on no connection's QP");
  }

 private:
  int host_;
  const CollectiveSetup& setup_;
  const Topology& topology_;
  std::vector<ComponentId> node_components_;
  std::vector<uint64_t> sequence_;
};

ScenarioDocument document(const nlohmann::json& scenario) {
  return testing::inline_document(scenario);
}

Time transfer(int64_t bytes, double bytes_per_second) {
  return Time{
      static_cast<int64_t>(std::ceil(static_cast<double>(bytes) * 1e12 / bytes_per_second))};
}

}  // namespace

TEST_CASE(
    "gpu node: a send/receive pair runs its slices at the channel's rate, each waiting for "
    "its message",
    "[collectives][gpu_node]") {
  // Two nodes of one GPU each; the fabric only resolves the set-up (plans, connections, QPs).
  const nlohmann::json scenario = {
      {"topology", {{"type", "rail_optimized"}, {"nodes", 2}, {"gpus_per_node", 1}, {"spines", 1}}},
      {"fabric", {{"link", {{"rate", "100Gbps"}, {"delay", "1us"}}}}},
      {"nccl", {{"nchannels", 1}}},
      {"traffic", nlohmann::json::array({{{"type", "collective"},
                                          {"op", "send_recv"},
                                          {"size", "256KiB"},
                                          {"start", "10us"}}})}};
  const Fabric fabric(document(scenario), 1);
  const CollectiveSetup& setup = fabric.collectives();
  const Topology& topology = fabric.topology();
  REQUIRE(setup.ops.size() == 1);
  REQUIRE(topology.nics_per_node == 1);
  // Each rank sends 256 KiB to the other in two 128 KiB slices (the network p2p chunk), on one
  // channel whose threads are split between the send and the receive lane.
  const nccl::Plan plan = nccl::make_plan(setup.ops[0].plan);
  REQUIRE(plan.lanes.size() == 4);
  for (const nccl::Lane& l : plan.lanes) {
    REQUIRE(l.share == 0.5);
    REQUIRE(l.units.size() == 2);
    for (const nccl::Unit& u : l.units) REQUIRE(u.bytes == 128 * 1024);
  }

  // Component ids: the NICs are hosts 0 and 1, then the GPU nodes.
  Simulator sim(1);
  const std::vector<ComponentId> nodes{2, 3};
  std::vector<ScriptedNic*> nics;
  for (int host = 0; host < 2; ++host) {
    auto nic = std::make_unique<ScriptedNic>(host, setup, topology, nodes);
    nics.push_back(nic.get());
    REQUIRE(sim.add(std::move(nic)) == static_cast<ComponentId>(host));
  }
  std::vector<GpuNode*> gpu_nodes;
  for (int v = 0; v < 2; ++v) {
    auto node = std::make_unique<GpuNode>("node" + std::to_string(v), v, setup, topology, nodes,
                                          std::vector<ComponentId>{static_cast<ComponentId>(v)});
    gpu_nodes.push_back(node.get());
    REQUIRE(sim.add(std::move(node)) == nodes[v]);
  }
  for (GpuNode* node : gpu_nodes) node->begin();
  const RunCounters counters = sim.run(milliseconds(10));
  CHECK_FALSE(counters.reached_end);

  // Launch: 10 us + base_latency. A slice takes X on the GPU (half the channel's rate); it is
  // posted net_step_latency + pcie_latency (D) after, and at the peer kArrive later.
  const Time launch = microseconds(10) + setup.nccl.base_latency;
  const Time x = transfer(128 * 1024, setup.gpu.channel_rate * 0.5);
  const Time d = setup.nccl.net_step_latency + setup.gpu.pcie_latency;
  for (int v = 0; v < 2; ++v) {
    const std::vector<Posted>& posted = nics[v]->posted;
    REQUIRE(posted.size() == 2);
    CHECK(posted[0].time == launch + x + d);  // the send lane's slices, back to back
    CHECK(posted[1].time == launch + x * 2 + d);
    CHECK(posted[0].bytes == 128 * 1024);
    CHECK(posted[0].connection == posted[1].connection);

    // The receive lane takes each slice as it arrives: the first at launch + X + D + kArrive,
    // the second is there by the time the first is done.
    const GpuNodeRecords& records = gpu_nodes[v]->records();
    REQUIRE(records.timings.size() == 1);
    CHECK(records.timings[0].start == launch - setup.nccl.base_latency);
    CHECK(records.timings[0].end == launch + x * 3 + d + kArrive);
    REQUIRE(records.iterations.size() == 1);
    CHECK(records.iterations[0].end == launch + x * 3 + d + kArrive);
    std::vector<Time> recv_starts;
    for (const CollectiveStepRecord& s : records.steps) {
      if (s.recv_peer >= 0) recv_starts.push_back(s.start);
    }
    REQUIRE(recv_starts.size() == 2);
    CHECK(recv_starts[0] == launch + x + d + kArrive);
    CHECK(recv_starts[1] == launch + x * 2 + d + kArrive);
  }
}
