// A store-and-forward Ethernet switch: routes each arriving frame by destination (ECMP over
// equal-cost ports), admits it into a shared buffer with tail drop, and serves eight priority
// queues per egress port in strict priority. The MMU, PFC and ECN hook in at admit() and
// at dequeue.
#pragma once

#include <vector>

#include "models/network_node.h"
#include "sim/params.h"
#include "models/routing.h"

namespace fabtwin {

struct SwitchConfig {
  Bytes buffer{};               // shared packet buffer of the whole switch
  Time queue_sample_interval{};  // 0 = no queue-depth samples
};

struct QueueSample {
  Time time;
  uint32_t port;
  int64_t bytes;
};

class Switch final : public NetworkNode {
 public:
  Switch(std::string name, PacketPool& pool, const RoutingTable& routing, int node,
         const SwitchConfig& config);

  // Schedules the first queue sample; call once the switch is added to a simulator.
  void begin();

  int64_t buffer_used() const { return buffer_used_; }
  int64_t max_buffer_used() const { return max_buffer_used_; }
  const std::vector<QueueSample>& queue_samples() const { return samples_; }

  static const ParamGroup& params();
  static SwitchConfig read_config(const nlohmann::json& scenario);

 protected:
  void on_arrival(uint32_t port, Packet* p) override;
  void on_transmit_done(uint32_t port) override;
  void on_timer(const Event& e) override;

 private:
  enum Handler : uint32_t { kSampleQueues = kBackgroundHandler | 1 };
  bool admit(const Packet& p);
  void start_transmission(uint32_t port);

  const RoutingTable& routing_;
  int node_;
  uint32_t ecmp_salt_;
  SwitchConfig config_;
  int64_t buffer_used_ = 0;
  int64_t max_buffer_used_ = 0;
  std::vector<QueueSample> samples_;
};

}  // namespace fabtwin
