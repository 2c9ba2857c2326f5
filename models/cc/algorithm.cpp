#include "models/cc/algorithm.h"

#include <array>

namespace fabtwin {
namespace {

struct Knobs {
  CcAlgorithm algorithm;
  const char* name;
  const ParamGroup& group;
};

std::array<Knobs, 3> knobs() {
  return {{{CcAlgorithm::Dcqcn, "dcqcn", dcqcn_params().group()},
           {CcAlgorithm::Dctcp, "dctcp", dctcp_params().group()},
           {CcAlgorithm::Timely, "timely", timely_params().group()}}};
}

const BoundParams<CcConfig> kCcParams{
    "nic.cc",
    "cc",
    "Congestion control",
    {
        BoundParams<CcConfig>::custom(
            {"algorithm", ParamType::Choice, "\"none\"",
             "per-QP congestion control on the sender NIC (none = line rate always); the chosen "
             "algorithm's knobs sit beside this key (nic.cc[algorithm=...] below), another "
             "algorithm's knobs are an error",
             "fabtwin", "none|dcqcn|dctcp|timely"},
            [](ParamReader& r, CcConfig& c) {
              const std::string name = r.choice("algorithm");
              for (const Knobs& k : knobs()) {
                if (name == k.name) c.algorithm = k.algorithm;
              }
            }),
    }};

const char* name_of(CcAlgorithm a) {
  for (const Knobs& k : knobs()) {
    if (k.algorithm == a) return k.name;
  }
  return "none";
}

bool declares(const ParamGroup& group, const std::string& key) {
  for (const Param& p : group.params) {
    if (p.key == key) return true;
  }
  return false;
}

}  // namespace

CcConfig read_cc_config(const nlohmann::json& scenario) {
  static const nlohmann::json none;
  const nlohmann::json& nic = scenario.contains("nic") ? scenario["nic"] : none;
  const nlohmann::json& cc = nic.is_object() && nic.contains("cc") ? nic["cc"] : none;
  if (!cc.is_null() && !cc.is_object()) {
    throw ScenarioError("nic.cc", "expected an object, found " + json_text(cc));
  }
  nlohmann::json choice = nlohmann::json::object();
  nlohmann::json rest = nlohmann::json::object();
  if (cc.is_object()) {
    for (const auto& [key, value] : cc.items()) (key == "algorithm" ? choice : rest)[key] = value;
  }
  CcConfig c = kCcParams.read(choice, "nic.cc");
  const std::string chosen = name_of(c.algorithm);
  for (const auto& [key, value] : rest.items()) {
    for (const Knobs& k : knobs()) {
      if (k.algorithm != c.algorithm && declares(k.group, key)) {
        throw ScenarioError(
            "nic.cc." + key,
            std::string("a ") + k.name + " parameter, but nic.cc.algorithm is \"" + chosen + "\"");
      }
    }
  }
  switch (c.algorithm) {
    case CcAlgorithm::None:
      ParamReader(rest, "nic.cc", kCcParams.group()).finish();  // names any unknown key
      break;
    case CcAlgorithm::Dcqcn:
      c.dcqcn = dcqcn_params().read(rest, "nic.cc");
      break;
    case CcAlgorithm::Dctcp:
      c.dctcp = dctcp_params().read(rest, "nic.cc");
      break;
    case CcAlgorithm::Timely:
      c.timely = timely_params().read(rest, "nic.cc");
      break;
  }
  return c;
}

std::vector<const ParamGroup*> cc_param_groups() {
  std::vector<const ParamGroup*> groups{&kCcParams.group()};
  for (const Knobs& k : knobs()) groups.push_back(&k.group);
  return groups;
}

std::string describe(const CcConfig& c) {
  if (c.algorithm == CcAlgorithm::Dcqcn) {
    // With ack_echo no CNP frame is counted: the label says where the notifications came from.
    return "dcqcn (" + c.dcqcn.profile + " profile" +
           (c.dcqcn.ack_echo ? ", ECN echo in ACKs" : "") + ")";
  }
  return name_of(c.algorithm);
}

std::unique_ptr<CongestionControl> make_congestion_control(const CcConfig& c, BitsPerSec line_rate,
                                                           Bytes mtu) {
  switch (c.algorithm) {
    case CcAlgorithm::Dcqcn:
      return std::make_unique<DcqcnReactionPoint>(c.dcqcn, line_rate);
    case CcAlgorithm::Dctcp:
      return std::make_unique<Dctcp>(c.dctcp, line_rate, mtu.count);
    case CcAlgorithm::Timely:
      return std::make_unique<Timely>(c.timely, line_rate);
    case CcAlgorithm::None:
      break;
  }
  return nullptr;
}

}  // namespace fabtwin
