// A RoCEv2 packet as the fabric sees it, and the pool packets come from.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "sim/units.h"

namespace fabtwin {

// Sack: a selective acknowledgement (nic.receiver selective_repeat): an ACK of the cumulative
// PSN that also names one PSN received out of order.
enum class PacketType : uint8_t { Data, Ack, Nak, Cnp, Pause, Sack, RnrNak };

// ECN codepoint of the IP header (RFC 3168).
enum class Ecn : uint8_t { NotEct = 0, Ect1 = 1, Ect0 = 2, Ce = 3 };

// Only the header fields the models act on are kept; `frame` is the Ethernet frame length
// (headers + payload + FCS) that queues and buffers account for. See roce_framing.h.
struct alignas(64) Packet {
  uint32_t flow = 0;         // flow (message) id, global
  uint32_t src_host = 0;     // host index of the sender of this packet
  uint32_t dst_host = 0;     // host index it is addressed to
  uint32_t sender_qp = 0;    // requester's local QP index (ACK/NAK lookup)
  uint32_t receiver_qp = 0;  // responder's local QP index (data lookup)
  uint32_t psn = 0;          // packet sequence number; for ACK/NAK: the next expected PSN
  uint32_t ecmp_hash = 0;    // hash of the 5-tuple (UDP source port varies per QP)
  int32_t payload = 0;       // payload bytes
  int32_t frame = 0;         // Ethernet frame bytes: headers + payload + FCS
  PacketType type = PacketType::Data;
  uint8_t priority = 0;  // 802.1p priority / traffic class 0..7
  uint8_t dscp : 6 = 0;
  bool ece : 1 = false;  // ACK/NAK: data it answers arrived CE-marked (ECN echo)
  Ecn ecn = Ecn::NotEct;
  // IP TTL, counted down from 255 by every switch that checks it. The TTL NICs send with,
  // routing.ttl, is applied there: a switch drops the frame once it has crossed routing.ttl
  // switches (255 - ttl >= routing.ttl), the hop at which the real TTL would reach 0. A constant
  // start costs the sender nothing.
  uint8_t ttl = 255;
  uint16_t home = 0;     // the pool that handed it out
  uint32_t message = 0;  // connection QPs: on a message's last packet, 1 + its index on the QP
  // Data and CNP: when the NIC put it on the wire. ACK/NAK: the timestamp of the data packet
  // that triggered it, echoed for the requester's RTT sample.
  Time timestamp{};
  Packet* next_free = nullptr;

  // A PFC frame (type Pause) carries the pause time it asks for, in quanta (0: XON), where a
  // RoCE packet carries its PSN.
  uint16_t pause_quanta() const { return static_cast<uint16_t>(psn); }
  void set_pause_quanta(uint16_t quanta) { psn = quanta; }
  // A SACK carries the PSN received out of order where a data packet carries its message mark.
  uint32_t sacked_psn() const { return message; }
  void set_sacked_psn(uint32_t sacked) { message = sacked; }
};
inline bool is_ect(const Packet* p) {
  return p->ecn != Ecn::NotEct;
}

// A packet is one cache line; a new field must take the place of an old one.
static_assert(sizeof(Packet) == 64);

// Packets are recycled through free lists; blocks are never returned until the pool dies,
// so steady state allocates nothing per packet. Every packet sits on a cache line of its own.
// The first block is small; every later one is a 2 MiB huge page of its own where the kernel
// grants one (sim/huge_pages.h): a run that queues hundreds of thousands of packets reads them all
// over the pool, and with 4 KiB pages nearly every such read also missed the TLB.
//
// Each partition (and each lane: Simulator::set_lane_local) has its own pool, and a packet is
// released into the pool of the context it ends its life in, whichever pool handed it out: its
// line is in this core's cache now, and the next packet this context takes is that one. (A
// packet sent home to the pool that handed it out crossed between cores twice: to the core that
// released it and back to the one that takes it again, on the 2-core host some 250 ns a line.)
// Free packets are kept in batches of kBatch, so that between windows, when no partition runs,
// balance() moves whole batches from pools that release more than they take to pools that take
// more than they release, in O(1) a batch.
class PacketPool {
 public:
  static constexpr uint32_t kBatch = 256;  // packets in a full batch of free packets

  explicit PacketPool(uint16_t index = 0) : index_(index) {}

  Packet* acquire() {
    if (free_ == nullptr) [[unlikely]]
      refill();
    Packet* p = free_;
    free_ = p->next_free;
    --free_count_;
    // The next one, perhaps released long ago, is fetched for writing now (docs/performance.md,
    // "Two events ahead").
    if (free_ != nullptr) __builtin_prefetch(free_, 1);
    *p = Packet{};
    p->home = index_;
    ++in_use_;
    ++taken_;
    return p;
  }
  void release(Packet* p) {
    if (free_count_ == kBatch) [[unlikely]]
      store_batch();
    p->next_free = free_;
    free_ = p;
    ++free_count_;
    --in_use_;
  }
  // Between windows only: tops each pool's full batches up to twice the packets it took in the
  // window that ended, as far as other pools hold more than that for themselves and one batch
  // to spare.
  static void balance(std::deque<PacketPool>& pools);

  // Packets handed out less those released into this pool: the sum over a run's pools is the
  // number alive (one pool's own can be negative, where it releases more than it takes).
  int64_t in_use() const { return in_use_; }
  int64_t capacity() const { return capacity_; }
  // Free packets held, in the current list and in full batches.
  int64_t free_packets() const {
    return free_count_ + static_cast<int64_t>(batches_.size()) * kBatch;
  }

 private:
  void refill();
  void grow();
  void store_batch();
  struct FreeBlock {
    size_t huge_bytes = 0;  // 0: the block came from the heap
    void operator()(Packet* block) const;
  };
  uint16_t index_;
  static constexpr size_t kFirstBlock = 4096;  // packets: 256 KiB
  std::vector<std::unique_ptr<Packet[], FreeBlock>> blocks_;
  Packet* free_ = nullptr;        // the list packets are taken from and released to
  uint32_t free_count_ = 0;       // packets in it, at most kBatch
  std::vector<Packet*> batches_;  // full batches: lists of kBatch packets each
  int64_t in_use_ = 0;
  int64_t taken_ = 0;  // packets handed out since the last balance()
  int64_t capacity_ = 0;
};

}  // namespace fabtwin
