// libFuzzer target over sweep files (`fabtwin sweep`): any bytes that are JSON must either expand
// into the sweep's points over a small base scenario or be refused with a SweepError or a
// ScenarioError naming the key. Anything else (a crash, a sanitizer report, another exception,
// a hang, memory beyond libFuzzer's limits) is a finding. Bytes that are not JSON are the
// scenario fuzzer's ground and are skipped here. Seeds: the sweep files in scenarios/ and
// tests/data/sweep/.
#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/params.h"
#include "sim/sweep/sweep_file.h"

namespace {
// Larger designs are skipped: expanding them takes long by design (up to a million points).
constexpr size_t kMaxGridPoints = 4096;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json j =
      nlohmann::json::parse(reinterpret_cast<const char*>(data),
                            reinterpret_cast<const char*>(data) + size, nullptr, false);
  if (j.is_discarded()) return 0;
  static const nlohmann::json base = {
      {"topology", {{"type", "star"}, {"hosts", 4}}},
      {"fabric", {{"ecn", {{"kmin", "10KB"}, {"kmax", "200KB"}}}}},
      {"traffic", {{{"type", "flows"}, {"flows", {{{"src", 0}, {"dst", 1}, {"size", "16KB"}}}}}}},
      {"run", {{"seed", 1}}}};
  try {
    const fabtwin::sweep::SweepFile s = fabtwin::sweep::parse_sweep(j, "/fuzz/x.sweep.json");
    if (s.points > kMaxGridPoints) return 0;  // a random or Latin-hypercube design's draws
    size_t points = 1;
    for (const fabtwin::sweep::Axis& a : s.axes) {
      points *= std::max<size_t>(1, a.values.size());
      if (points > kMaxGridPoints) return 0;
    }
    for (const fabtwin::sweep::Point& p : fabtwin::sweep::expand(s, base)) {
      (void)fabtwin::sweep::describe_point(s, p.values);
    }
  } catch (const fabtwin::sweep::SweepError&) {
  } catch (const fabtwin::ScenarioError&) {
  }
  return 0;
}
