// One process running a scenario's collective generators through NCCL as a job of one rank (a
// control group of one, in process): the refusal without a GPU, tested on every build machine,
// and a real one-GPU run where a GPU is at hand (tests/CMakeLists.txt, hwobs block).
//   nccl_one_rank --expect-no-gpu             exit 77 (skip) when a CUDA device exists
//   nccl_one_rank SCENARIO [--set PATH=VALUE]...
// Exit 0: the rows printed; 2: refused, the reason on stderr; 77: skipped.
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "hw/nccl/nccl_collectives.h"
#include "sim/scenario_file.h"

using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

// The control group of a job of one process: every collective call returns its own bytes.
class SoleProcess : public ControlGroup {
 public:
  int rank() const override { return 0; }
  int ranks() const override { return 1; }
  uint16_t bound_port() const override { return 0; }
  void barrier() override {}
  std::vector<unsigned char> broadcast(const std::vector<unsigned char>& bytes, int) override {
    return bytes;
  }
  std::vector<std::vector<unsigned char>> allgather(const std::vector<unsigned char>& b) override {
    return {b};
  }
  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& b) override {
    return {b};
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 1 && args[0] == "--expect-no-gpu") {
      int devices = 0;
      try {
        devices = require_cuda_devices();
      } catch (const NcclRunError&) {
      }
      if (devices > 0) {
        std::cout << "a CUDA device is present (" << devices
                  << "): the refusal without one is not tested here\n";
        return 77;
      }
      args.clear();
      args.push_back(FABTWIN_SOURCE_DIR "/scenarios/nccl/all_reduce_sweep_2x8_ndr.json");
    } else if (args.size() == 2 && args[0] == "--skip-without-gpu") {
      try {
        require_cuda_devices();
      } catch (const NcclRunError& e) {
        std::cout << "skipped: " << e.what() << "\n";
        return 77;
      }
      args.erase(args.begin());
    }
    if (args.empty()) {
      std::cerr << "usage: nccl_one_rank SCENARIO [--set PATH=VALUE]...\n";
      return 2;
    }
    std::vector<std::string> sets;
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      if (args[i] == "--set") sets.push_back(args[i + 1]);
    }
    const FabricSpec spec = FabricSpec::resolve(load_scenario(args[0], sets));
    SoleProcess group;
    const CollectiveMeasurement m = run_nccl_collectives(spec, group, NcclRunSettings{});
    std::cout << "NCCL " << m.nccl_version << ", network " << m.network << "\n";
    for (const CollectiveRow& r : m.rows) {
      std::cout << r.op << " " << r.size << " B " << r.algorithm << "/" << r.protocol << " "
                << r.channels << " channels " << r.time_us << " us algbw " << r.algbw
                << " GB/s busbw " << r.busbw << " GB/s\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "nccl_one_rank: " << e.what() << "\n";
    return 2;
  }
}
