// A store-and-forward Ethernet switch. An arriving frame is classified by DSCP to a priority,
// routed (ECMP over equal-cost ports), and admitted by the shared-buffer MMU; lossless
// priorities send PFC XOFF/XON upstream as their ingress groups cross the MMU's thresholds.
// Egress queues are served strict-priority then DWRR, skip priorities paused by the peer, and
// mark ECN (RED) at dequeue or enqueue.
#pragma once

#include <tuple>
#include <vector>

#include "models/net/network_node.h"
#include "models/net/routing.h"
#include "models/net/shared_buffer.h"
#include "models/net/switch_config.h"

namespace fabtwin {

struct QueueSample {
  Time time;
  uint32_t port;
  int64_t bytes;
};

struct BufferSample {
  Time time;
  int64_t bytes;
};

class Switch final : public NetworkNode {
 public:
  Switch(std::string name, PacketPool& pool, ForwardingTable forwarding, int node,
         const SwitchConfig& config);

  // Sizes the buffer once the ports are wired (headroom depends on each port's link) and
  // schedules the first sample; call once the switch is added to a simulator.
  void begin();

  const SharedBuffer& buffer() const { return *buffer_; }
  int64_t headroom_overflows() const;
  const std::vector<QueueSample>& queue_samples() const { return samples_; }
  const std::vector<BufferSample>& buffer_samples() const { return buffer_samples_; }
  void discard_background_after(unsigned __int128 stop) override;

 protected:
  void on_arrival(uint32_t port, Packet* p) override;
  void on_transmit_done(uint32_t port) override;
  void on_timer(const Event& e) override;
  void watchdog_flush(uint32_t port, int priority) override;

 private:
  void start_transmission(uint32_t port);
  void maybe_mark(EgressPort& port, int priority, Packet* p, int64_t queue_bytes);
  Time refresh_interval(uint32_t port) const;

  ForwardingTable forwarding_;
  uint32_t ecmp_salt_;
  SwitchConfig config_;
  std::unique_ptr<SharedBuffer> buffer_;
  // PFC each ingress port sends upstream as its priority groups cross XOFF and XON.
  std::vector<PauseSender> pause_senders_;
  std::vector<QueueSample> samples_;
  std::vector<BufferSample> buffer_samples_;
  // (order of the sampling event, sizes of the two sample lists before it), for undoing.
  std::vector<std::tuple<unsigned __int128, size_t, size_t>> sample_events_;
};

}  // namespace fabtwin
