#include "models/nic/receiver_mode.h"

namespace fabtwin {
namespace {

using ReceiverParams = BoundParams<ReceiverConfig>;

const ReceiverParams kReceiverParams{
    "nic.receiver",
    "receiver",
    "NIC receiver mode (out-of-order and lost packets)",
    {
        ReceiverParams::custom(
            {"mode", ParamType::Choice, "\"go_back_n\"",
             "go_back_n: a gap is NAKed once and later packets are dropped until the expected PSN "
             "arrives (RoCE RC); out_of_order: data is placed on arrival, the cumulative ACK "
             "moves over the filled prefix, a hole still open after nak_delay is NAKed and the "
             "requester goes back to it (ConnectX out-of-order placement); selective_repeat: "
             "every out-of-order packet is SACKed, the requester resends only the holes and keeps "
             "at most bdp_cap in flight (IRN)",
             "InfiniBand RC; NVIDIA MLNX_OFED out-of-order data placement (ConnectX-5 and "
             "later); Mittal et al., SIGCOMM 2018 (IRN)",
             "go_back_n|out_of_order|selective_repeat"},
            [](ParamReader& r, ReceiverConfig& c) {
              const std::string m = r.choice("mode");
              c.mode = m == "out_of_order"       ? ReceiverMode::OutOfOrder
                       : m == "selective_repeat" ? ReceiverMode::SelectiveRepeat
                                                 : ReceiverMode::GoBackN;
            }),
        ReceiverParams::field(
            &ReceiverConfig::window,
            {"window", ParamType::Integer, "1024",
             "PSNs the receiver (and the selective-repeat requester) track past the expected one, "
             "a bitmap allocated per queue pair when it is set up; a packet further ahead is "
             "dropped as go-back-N drops it",
             "fabtwin assumption; the ConnectX tracking window is not published", "1..65536"}),
        ReceiverParams::field(
            &ReceiverConfig::nak_delay,
            {"nak_delay", ParamType::Time, "\"100us\"",
             "out_of_order: a hole (a missing PSN with later ones placed) still open this long "
             "after it was seen is NAKed, and the requester goes back to it",
             "fabtwin assumption: ConnectX does not document when it gives up on a hole; of "
             "the order of a few fabric round trips under load"}),
        ReceiverParams::custom(
            {"bdp_cap", ParamType::Bytes, "\"auto\"",
             "selective_repeat: payload bytes in flight (sent and not cumulatively acknowledged) "
             "at most; \"auto\" = the line rate times the smallest round trip the queue pair has "
             "measured (no cap before the first ACK, which comes one round trip, one BDP, after "
             "the first packet)",
             "Mittal et al., SIGCOMM 2018 (IRN): BDP-FC caps in-flight packets at the path's "
             "BDP"},
            [](ParamReader& r, ReceiverConfig& c) {
              c.bdp_cap = r.bytes_or("bdp_cap", "auto").value_or(Bytes{0}).count;
              if (c.bdp_cap < 0) {
                throw ScenarioError(r.path_of("bdp_cap"), "expected \"auto\" or a size, found " +
                                                              format_bytes(Bytes{c.bdp_cap}));
              }
            }),
        ReceiverParams::field(&ReceiverConfig::rto_low,
                              {"rto_low", ParamType::Time, "\"100us\"",
                               "selective_repeat: retransmission timeout while at most "
                               "rto_low_packets are in flight",
                               "Mittal et al., SIGCOMM 2018 (IRN): RTO_low 100us"}),
        ReceiverParams::field(&ReceiverConfig::rto_high,
                              {"rto_high", ParamType::Time, "\"320us\"",
                               "selective_repeat: retransmission timeout otherwise",
                               "Mittal et al., SIGCOMM 2018 (IRN): RTO_high 320us"}),
        ReceiverParams::field(&ReceiverConfig::rto_low_packets,
                              {"rto_low_packets", ParamType::Integer, "3",
                               "selective_repeat: in-flight packets at or below which rto_low "
                               "applies",
                               "Mittal et al., SIGCOMM 2018 (IRN): N = 3", "0..65536"}),
    },
    [](ParamReader& r, const ReceiverConfig& c) {
      for (const char* key : {"nak_delay", "rto_low", "rto_high"}) {
        const Time t = key[0] == 'n' ? c.nak_delay : key[4] == 'l' ? c.rto_low : c.rto_high;
        if (t.ps <= 0) {
          throw ScenarioError(r.path_of(key), "expected a positive time, found " + format_time(t));
        }
      }
      if (c.rto_low > c.rto_high) {
        throw ScenarioError(r.path_of("rto_low"), "expected rto_low <= rto_high, found " +
                                                      format_time(c.rto_low) + " > " +
                                                      format_time(c.rto_high));
      }
    }};

}  // namespace

const BoundParams<ReceiverConfig>& receiver_params() {
  return kReceiverParams;
}

ReceiverConfig read_receiver_config(const nlohmann::json& section) {
  return kReceiverParams.read(section, "nic.receiver");
}

const char* name_of(ReceiverMode mode) {
  switch (mode) {
    case ReceiverMode::OutOfOrder:
      return "out_of_order";
    case ReceiverMode::SelectiveRepeat:
      return "selective_repeat";
    default:
      return "go_back_n";
  }
}

}  // namespace fabtwin
