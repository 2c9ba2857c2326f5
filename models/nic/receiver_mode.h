// How a NIC's queue pairs recover from packets that arrive out of order or not at all: the
// receiver mode (`nic.receiver`) and its parameters. Go-back-N is the RoCE default; out-of-order
// placement is ConnectX's answer to adaptive routing; selective repeat is IRN's
// (docs/receivers.md).
#pragma once

#include <cstdint>

#include "sim/params.h"

namespace fabtwin {

enum class ReceiverMode : uint8_t {
  GoBackN,          // a gap is NAKed once; later packets are dropped until the expected PSN
  OutOfOrder,       // data placed on arrival; a hole is NAKed only if it outlives nak_delay
  SelectiveRepeat,  // every out-of-order packet is SACKed; the requester resends only holes
};

struct ReceiverConfig {
  ReceiverMode mode = ReceiverMode::GoBackN;
  int window = 0;           // PSNs tracked past the expected one (out_of_order, selective_repeat)
  Time nak_delay{};         // out_of_order: a hole older than this is NAKed
  int64_t bdp_cap = 0;      // selective_repeat: bytes in flight at most; 0 = auto (measured BDP)
  Time rto_low{};           // selective_repeat: timeout with few packets in flight
  Time rto_high{};          // selective_repeat: timeout otherwise
  int rto_low_packets = 0;  // "few": at most this many packets in flight

  bool operator==(const ReceiverConfig&) const = default;
};

const BoundParams<ReceiverConfig>& receiver_params();
// The `nic.receiver` section of a scenario (defaults when absent).
ReceiverConfig read_receiver_config(const nlohmann::json& section);
const char* name_of(ReceiverMode mode);

// What a responder counts for each queue pair: the analogues of the ConnectX counters
// out_of_sequence, packet_seq_err (NAKs) and duplicate_request, and the reorder depth.
struct ReceiverCounters {
  int64_t out_of_sequence = 0;     // data packets that arrived ahead of the expected PSN
  int64_t naks_sent = 0;           // sequence-error NAKs sent
  int64_t sacks_sent = 0;          // selective acknowledgements sent
  int64_t duplicates = 0;          // data packets already received (or placed)
  uint32_t max_reorder_depth = 0;  // largest PSN distance of an arrival ahead of the expected
};

}  // namespace fabtwin
