// The transmitting end of one direction of a full-duplex link: eight priority queues served
// strict-priority then DWRR, the per-priority PFC pause state set by the peer, a line rate, a
// propagation delay, the peer it feeds, and per-priority counters.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cstdint>
#include <vector>

#include "models/net/ecn_marking.h"
#include "models/net/packet_fifo.h"
#include "models/net/port_counters.h"
#include "models/net/roce_framing.h"
#include "sim/event.h"

namespace fabtwin {

inline constexpr int kPriorities = 8;

// How a port shares its wire among queues: strict priorities first (highest number first),
// then deficit-weighted round robin among the others.
struct SchedulerConfig {
  uint8_t strict_mask = 0;  // bit p set: priority p is served strictly
  std::array<int, kPriorities> weights{1, 1, 1, 1, 1, 1, 1, 1};
  int quantum = 9216;  // bytes of credit per unit of weight per round

  bool operator==(const SchedulerConfig&) const = default;
};

// A closed PFC pause interval of one priority on one egress.
struct PauseInterval {
  uint8_t priority;
  Time start;
  Time end;
};

// One priority's queue at an egress port, with the PFC pause and DWRR credit that every frame
// through it reads: one cache line, where three arrays indexed by priority made it three.
struct alignas(64) EgressQueue : PacketFifo {
  Time paused_until{};  // PFC: paused by the peer's pause frames until then
  Time paused_since{};  // PFC: start of the open pause episode (see close_pause)
  int64_t deficit = 0;  // DWRR credit, bytes
};
static_assert(sizeof(EgressQueue) == 64);

// A priority's counters at a port, starting a cache line: the ones a frame updates lead them.
struct alignas(64) QueueCounters : PriorityCounters {};

// A fabric has thousands of ports, and the lines of them that frames touch must stay few: what
// every frame reads or writes fills the first cache line, then come a line per priority queue
// and each priority's counters from the start of a line (the ones a frame updates lead them);
// what frames seldom need comes last.
struct alignas(64) EgressPort {
  Time busy_until{};        // the frame on the wire ends then
  Time delay{};             // propagation delay to the peer
  int64_t ps_per_byte = 0;  // rate as whole picoseconds per byte, 0 if not a whole number
  Time busy_time{};         // total time spent serializing (utilization)

 private:
  // RED/ECN: a queue deeper than this (bytes) may mark: Kmin of red_ where the egress marks,
  // never where it does not (set_marking() sets both).
  int64_t mark_above_ = INT64_MAX;

 public:
  ComponentId peer = 0;         // component at the other end
  uint32_t peer_port = 0;       // its port index
  bool done_scheduled = false;  // a transmit-done event is pending for busy_until
  uint8_t backlog = 0;          // bit p: queue p is not empty (enqueue() and dequeue() keep it)
  // PFC watchdog (priority_flow_control.h): bit p: queue p is in a pause storm and ignores
  // the peer's pause frames; and with the drop action, discards its frames.
  uint8_t watchdog_storm = 0;
  uint8_t watchdog_drop = 0;
  uint8_t credited = 0;  // DWRR: bit p: priority p got its quantum this visit
  uint8_t round = 0;     // DWRR: the queue the round robin is at

 private:
  bool pause_waiting_ = false;  // pending_pause_ is not empty

 public:
  const SchedulerConfig* scheduler = nullptr;  // null: strict priority only
  std::array<EgressQueue, kPriorities> queues;
  std::array<QueueCounters, kPriorities> counters{};
  BitsPerSec rate{};
  std::vector<PauseInterval> pause_intervals;

  // RED/ECN marking at this egress: on (`ecn`) with `curve`, or off.
  void set_marking(bool ecn, const RedMarking& curve) {
    red_ = curve;
    mark_above_ = ecn ? curve.kmin : INT64_MAX;
  }
  // Whether a queue of `queue_bytes` may mark (ECN on and above Kmin); red() then decides.
  bool may_mark(int64_t queue_bytes) const { return queue_bytes > mark_above_; }
  const RedMarking& red() const { return red_; }

  // PFC frames waiting to go out ahead of any queue, first come first served.
  bool pause_waiting() const { return pause_waiting_; }
  void queue_pause(uint8_t priority, uint16_t quanta) {
    pending_pause_.emplace_back(priority, quanta);
    pause_waiting_ = true;
  }
  // The first waiting frame: (priority, quanta); one must be waiting.
  std::pair<uint8_t, uint16_t> take_pause() {
    const auto first = pending_pause_.front();
    pending_pause_.erase(pending_pause_.begin());
    pause_waiting_ = !pending_pause_.empty();
    return first;
  }
  void drop_pauses() {
    pending_pause_.clear();
    pause_waiting_ = false;
  }

  std::array<PriorityCounters, kPriorities> counter_values() const {
    std::array<PriorityCounters, kPriorities> values;
    std::copy(counters.begin(), counters.end(), values.begin());
    return values;
  }

  void set_rate(BitsPerSec r) {
    rate = r;
    constexpr int64_t kBitPicoseconds = 8'000'000'000'000;
    ps_per_byte = kBitPicoseconds % r.bps == 0 ? kBitPicoseconds / r.bps : 0;
  }

  // roce::wire_time without a division when the rate allows it (all standard Ethernet rates).
  Time wire_time(int frame) const {
    if (ps_per_byte == 0) return roce::wire_time(frame, rate);
    const int bytes =
        (frame < roce::kMinFrameBytes ? roce::kMinFrameBytes : frame) + roce::kWireGapBytes;
    return {bytes * ps_per_byte};
  }

  int64_t queued_bytes() const {
    int64_t total = 0;
    for (const PacketFifo& q : queues) total += q.bytes();
    return total;
  }

  bool paused(int priority, Time now) const { return queues[priority].paused_until > now; }
  bool has_backlog() const { return backlog != 0; }

  // The queue to serve next, or -1 if every non-empty queue is paused.
  int select(Time now) {
    unsigned eligible = backlog;
    for (unsigned bits = eligible; bits != 0; bits &= bits - 1) {
      const int p = std::countr_zero(bits);
      if (paused(p, now)) eligible &= ~(1u << p);
    }
    if (eligible == 0) return -1;
    if (scheduler == nullptr) return 31 - std::countl_zero(eligible);  // strict priority
    if (const unsigned strict = eligible & scheduler->strict_mask; strict != 0) {
      return 31 - std::countl_zero(strict);
    }
    if ((eligible & (eligible - 1)) == 0) {  // alone: served at once, no credit carried over
      const int p = std::countr_zero(eligible);
      queues[p].deficit = queues[p].front().frame;
      return p;
    }
    for (;;) {  // deficit-weighted round robin
      const int p = round;
      if (eligible >> p & 1) {
        if (!(credited >> p & 1)) {
          queues[p].deficit += static_cast<int64_t>(scheduler->quantum) * scheduler->weights[p];
          credited |= static_cast<uint8_t>(1u << p);
        }
        if (queues[p].deficit >= queues[p].front().frame) return p;
      } else if (!(backlog >> p & 1)) {
        queues[p].deficit = 0;  // an idle queue keeps no credit
      }
      credited &= static_cast<uint8_t>(~(1u << p));
      round = static_cast<uint8_t>((round + 1) % kPriorities);
    }
  }

  // Takes the head of queue `priority` (after select()).
  QueuedPacket dequeue(int priority) {
    const QueuedPacket q = queues[priority].pop();
    if (queues[priority].empty()) backlog &= static_cast<uint8_t>(~(1u << priority));
    return q;
  }

  // Called with the frame taken from queue `priority` after select().
  void charge(int priority, int frame) { queues[priority].deficit -= frame; }

  // `ingress_priority`: the priority group the frame is accounted to at its ingress (a switch's).
  void enqueue(Packet* p, uint16_t ingress = 0, uint8_t ingress_priority = 0) {
    PacketFifo& q = queues[p->priority];
    q.push(p, ingress, ingress_priority);
    backlog |= static_cast<uint8_t>(1u << p->priority);
    PriorityCounters& c = counters[p->priority];
    if (q.bytes() > c.max_queue_bytes) c.max_queue_bytes = q.bytes();
  }

  // A pause frame for `priority` arrived at `now` asking for `duration` (0: resume).
  void pause(int priority, Time now, Time duration) {
    PriorityCounters& c = counters[priority];
    if (duration.ps == 0) {
      ++c.xon_received;
      close_pause(priority, now);
      queues[priority].paused_until = now;
      return;
    }
    ++c.pause_received;
    if (!paused(priority, now)) {
      close_pause(priority, now);  // a pause that expired unseen ends where it expired
      queues[priority].paused_since = now;
    }
    queues[priority].paused_until = now + duration;
  }

  // Ends the open pause episode of `priority` at `now`, or where it expired if earlier, and
  // records it. An episode is open while paused_until > paused_since.
  void close_pause(int priority, Time now) {
    EgressQueue& q = queues[priority];
    if (q.paused_until <= q.paused_since) return;
    const Time end = q.paused_until < now ? q.paused_until : now;
    counters[priority].paused_time += end - q.paused_since;
    pause_intervals.push_back({static_cast<uint8_t>(priority), q.paused_since, end});
    q.paused_since = q.paused_until = end;
  }

 private:
  RedMarking red_;
  std::vector<std::pair<uint8_t, uint16_t>> pending_pause_;  // (priority, quanta)
};

}  // namespace fabtwin
