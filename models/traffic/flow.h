// A flow: one RDMA WRITE or SEND message from a source host to a destination host, and what
// became of it.
#pragma once

#include <cstdint>

#include "sim/record_field.h"
#include "sim/units.h"

namespace fabtwin {

// The RC operation that carries a flow's message. A WRITE's first packet carries a RETH (the
// remote address and length) and needs no receive WQE; a SEND carries no RETH and consumes a
// receive WQE at the responder, which answers an RNR NAK when none is posted.
enum class Verb : uint8_t { Write = 0, Send = 1 };

struct FlowSpec {
  uint32_t id = 0;
  int src = 0;
  int dst = 0;
  Bytes size{};
  Time start{};
  int dscp = 26;           // DSCP of its packets; switches and NICs map it to a priority
  uint32_t generator = 0;  // index of the scenario's `traffic` entry that made it
  Verb verb = Verb::Write;

  bool operator==(const FlowSpec&) const = default;
};

constexpr auto record_fields(std::type_identity<FlowSpec>) {
  return std::tuple{
      field("id", &FlowSpec::id, "", "Flow id, unique within the run."),
      field("src", &FlowSpec::src, "",
            "Source host index. Hosts are nodes `0..hosts-1`, named `host<N>`."),
      field("dst", &FlowSpec::dst, "", "Destination host index."),
      field("dscp", &FlowSpec::dscp, "",
            "DSCP (0..63) of the flow's data and ACKs, as the scenario gave it. Switches and NICs "
            "map it to a priority with `fabric.qos.dscp_to_priority` (by default DSCP >> 3, so 26 "
            "is priority 3); the mapping is in the `scenario` attribute, not in this table."),
      field("size_bytes", &FlowSpec::size, "B", "Message size (payload bytes)."),
      field("start_ps", &FlowSpec::start, "ps", "Time the message was posted at the source."),
      field("generator", &FlowSpec::generator, "",
            "Index of the scenario's `traffic` entry (traffic generator) that made the flow."),
      field("verb", &FlowSpec::verb, "",
            "The RC operation carrying the message: 0 = RDMA WRITE, 1 = SEND (the generator's "
            "`verb`)."),
  };
}

struct FlowRecord {
  FlowSpec spec;
  bool completed = false;     // the requester saw the last ACK
  Time finish{};              // requester completion (last ACK received)
  Time last_byte_received{};  // responder received the last in-order byte
  int64_t bytes_received = 0;
  int64_t packets_sent = 0;  // data packets put on the wire, retransmissions included
  int64_t packets_retransmitted = 0;
  int64_t timeouts = 0;
  int64_t cnps_sent = 0;      // by the responder's notification point
  int64_t cnps_received = 0;  // by the requester's reaction point
  int64_t rate_cuts = 0;
  // The responder's counters (receiver_mode.h), summed over the flow's QPs.
  int64_t out_of_sequence = 0;
  int64_t naks_sent = 0;
  int64_t sacks_sent = 0;
  int64_t duplicates = 0;
  int64_t max_reorder_depth = 0;
  int64_t rnr_naks = 0;  // SEND: receiver-not-ready NAKs the responder answered

  Time fct() const { return finish - spec.start; }
  // Message bits over flow completion time, bits per second.
  double goodput_bps() const {
    const double t = fct().seconds();
    return t > 0 ? static_cast<double>(spec.size.count) * 8.0 / t : 0.0;
  }
};

constexpr auto record_fields(std::type_identity<FlowRecord>) {
  return std::tuple{
      field("spec", &FlowRecord::spec, "", "What was asked for."),
      field("finish_ps", &FlowRecord::finish, "ps",
            "Time the source saw the last ACK (completion); `-1` if not completed.", Merge::Max,
            &FlowRecord::completed),
      computed<FlowRecord, int64_t>(
          "fct_ps", [](const FlowRecord& f) { return f.completed ? f.fct().ps : int64_t{-1}; },
          "ps", "Flow completion time, `finish_ps - start_ps`; `-1` if not completed."),
      computed<FlowRecord, double>(
          "goodput_bps", [](const FlowRecord& f) { return f.completed ? f.goodput_bps() : 0.0; },
          "b/s", "`size_bytes * 8 / fct`; 0 if not completed."),
      field("completed", &FlowRecord::completed, "0/1",
            "1 if the source saw the last ACK before the run ended.", Merge::Any),
      field("bytes_received", &FlowRecord::bytes_received, "B",
            "Payload bytes the destination received in order.", Merge::Max),
      field("last_byte_ps", &FlowRecord::last_byte_received, "ps",
            "Time the destination received its last in-order byte so far (0 if none).", Merge::Max),
      field("packets_sent", &FlowRecord::packets_sent, "packets",
            "Data packets the source put on the wire, retransmissions included.", Merge::Sum),
      field("packets_retransmitted", &FlowRecord::packets_retransmitted, "packets",
            "Of those, retransmissions.", Merge::Sum),
      field("timeouts", &FlowRecord::timeouts, "",
            "Retransmission timeouts the source's queue pair took.", Merge::Sum),
      field("cnps_sent", &FlowRecord::cnps_sent, "CNPs",
            "Congestion notification packets the destination's notification point sent for "
            "this flow (at most one per `nic.cc.min_time_between_cnps`). 0 when congestion "
            "control is off.",
            Merge::Sum),
      field("cnps_received", &FlowRecord::cnps_received, "CNPs",
            "CNPs the source received for this flow, including any that arrived after it "
            "completed.",
            Merge::Sum),
      field("rate_cuts", &FlowRecord::rate_cuts, "",
            "Rate decreases the source's reaction point made. One per CNP, unless the monitor "
            "period merged several CNPs into one cut. The rate set by "
            "`rate_to_set_on_first_cnp` counts as one. 0 when congestion control is off.",
            Merge::Sum),
      field("out_of_sequence", &FlowRecord::out_of_sequence, "packets",
            "Data packets the destination received ahead of the PSN it expected (the ConnectX "
            "counter `out_of_sequence`). Go-back-N drops them; out-of-order placement and "
            "selective repeat keep those within `nic.receiver.window`.",
            Merge::Sum),
      field("naks_sent", &FlowRecord::naks_sent, "NAKs",
            "Sequence-error NAKs the destination sent (what the source's `packet_seq_err` "
            "counts): one per gap under go-back-N, one per hole that outlived "
            "`nic.receiver.nak_delay` under out-of-order placement, none under selective repeat.",
            Merge::Sum),
      field("sacks_sent", &FlowRecord::sacks_sent, "SACKs",
            "Selective acknowledgements the destination sent (selective repeat: one per packet "
            "placed out of order).",
            Merge::Sum),
      field("duplicates", &FlowRecord::duplicates, "packets",
            "Data packets the destination had already received or placed (the ConnectX counter "
            "`duplicate_request`).",
            Merge::Sum),
      field("max_reorder_depth", &FlowRecord::max_reorder_depth, "packets",
            "Largest distance, in PSNs, of an arrival ahead of the PSN the destination expected "
            "(0 if every packet arrived in order).",
            Merge::Max),
      field("rnr_naks", &FlowRecord::rnr_naks, "NAKs",
            "Receiver-not-ready NAKs the destination answered to a SEND that found no receive "
            "WQE posted (`nic.receive_queue_depth`); the source resent after "
            "`nic.min_rnr_timer` each time. 0 for a WRITE.",
            Merge::Sum),
  };
}

}  // namespace fabtwin
