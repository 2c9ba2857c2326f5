// libFuzzer target over scenario loading and resolution: any bytes must either resolve to a
// FabricSpec or be refused with a ScenarioError. Anything else (a crash, a sanitizer report,
// another exception, a hang, memory beyond libFuzzer's limits) is a finding.
//
// Input: the scenario's JSON text, then optionally NUL bytes each followed by one `--set`
// override ("path=value"). `extends` names files and is not followed here: the in-memory
// document is what is fuzzed. Relative paths (cdf, topology.file) resolve from scenarios/.
//
// FABTWIN_FUZZ_OUTCOME=1 prints each input's outcome to stderr (for the figures in
// docs/hardening.md).
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "models/fabric/fabric_spec.h"
#include "sim/params.h"
#include "sim/scenario_file.h"

namespace {

constexpr size_t kMaxOverrides = 4;
// Fabrics above this many nodes are left out: wiring and routing them takes seconds by design
// (FabricSpec::resolve bounds a fabric by the machine's memory), which would swamp the fuzzer.
constexpr int64_t kMaxNodes = 2048;

bool report_outcome() {
  static const bool on = std::getenv("FABTWIN_FUZZ_OUTCOME") != nullptr;
  return on;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  size_t end = input.find('\0');
  const std::string text = input.substr(0, end);
  std::vector<std::string> overrides;
  while (end != std::string::npos && overrides.size() < kMaxOverrides) {
    const size_t next = input.find('\0', end + 1);
    overrides.push_back(input.substr(end + 1, next == std::string::npos ? next : next - end - 1));
    end = next;
  }
  try {
    fabtwin::ScenarioDocument doc;
    doc.root = fabtwin::parse_json_text(text, "fuzz.json", "");
    if (!doc.root.is_object()) {
      throw fabtwin::ScenarioError("", "expected a JSON object");  // as load_scenario does
    }
    doc.root.erase("extends");
    for (const std::string& o : overrides) fabtwin::apply_override(doc.root, o);
    doc.dir = FABTWIN_SCENARIO_DIR;
    doc.file = doc.dir / "fuzz.json";
    // Larger fabrics are refused here (a ScenarioError naming this limit): their routes take
    // seconds by design, beyond the fuzzer's time limit. Smaller ones are built twice.
    fabtwin::read_topology(doc.root, doc.dir, [](const fabtwin::TopologySize& s) {
      if (s.hosts + s.switches > kMaxNodes) {
        throw fabtwin::ScenarioError(
            "topology", "more than the fuzzer's " + std::to_string(kMaxNodes) + " nodes");
      }
    });
    const fabtwin::FabricSpec spec = fabtwin::FabricSpec::resolve(doc);
    if (report_outcome()) {
      std::cerr << "fuzz outcome: accepted (" << spec.topology.hosts << " hosts, "
                << spec.flows.size() << " flows)\n";
    }
  } catch (const fabtwin::ScenarioError& e) {
    if (report_outcome()) std::cerr << "fuzz outcome: clear error: " << e.what() << "\n";
  }
  return 0;
}
