// Which congestion control a queue pair runs: nic.cc.algorithm chooses it, each algorithm's
// knobs sit beside that key in their own parameter group, and make_congestion_control builds
// the chosen one for a queue pair. The NIC knows no algorithm by name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "models/cc/congestion_control.h"
#include "models/cc/dcqcn.h"
#include "models/cc/dctcp.h"
#include "models/cc/timely.h"
#include "sim/params.h"

namespace fabtwin {

enum class CcAlgorithm { None, Dcqcn, Dctcp, Timely };

struct CcConfig {
  CcAlgorithm algorithm = CcAlgorithm::None;
  DcqcnConfig dcqcn;
  DctcpConfig dctcp;
  TimelyConfig timely;

  // The receiver's notification point (CNPs for CE-marked arrivals) runs with DCQCN only, and
  // not when DCQCN takes its notifications from the ECN echo of ACKs.
  const DcqcnConfig* notification_point() const {
    return algorithm == CcAlgorithm::Dcqcn && !dcqcn.ack_echo ? &dcqcn : nullptr;
  }

  bool operator==(const CcConfig&) const = default;
};

// Reads nic.cc. A knob of an algorithm other than the chosen one is an error naming both.
CcConfig read_cc_config(const nlohmann::json& scenario);
// nic.cc (the choice) and each algorithm's group, for describe and the schema.
std::vector<const ParamGroup*> cc_param_groups();
// "none", "dcqcn (paper profile)", "dctcp", "timely".
std::string describe(const CcConfig& config);
// The algorithm for one queue pair (null with none); `mtu`: payload bytes of a full packet.
// It keeps a reference to `config`.
std::unique_ptr<CongestionControl> make_congestion_control(const CcConfig& config,
                                                           BitsPerSec line_rate, Bytes mtu);

}  // namespace fabtwin
