// A scenario's collective generators run through NCCL as a job of one rank (a control group of
// one, in process: tests/in_process_control.h), or of N ranks joined over the real control group on
// loopback: the refusal without a GPU, tested on every build machine, and a real one-GPU run where
// a GPU is at hand (tests/CMakeLists.txt, hwobs block).
//   nccl_one_rank --expect-no-gpu             exit 77 (skip) when a CUDA device exists
//   nccl_one_rank --ranks-without-gpu N       N ranks joined over the real control group on
//                                             localhost, each refused on every rank at once
//   nccl_one_rank SCENARIO [--set PATH=VALUE]...
// Exit 0: the rows printed; 2: refused, the reason on stderr; 77: skipped.
#include <cstring>
#include <future>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "hw/nccl/nccl_collectives.h"
#include "in_process_control.h"
#include "sim/scenario_file.h"

using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

// N ranks (threads) join one control group over loopback and run the collectives; without a
// GPU every rank must stop with the reasons of all ranks, none left waiting. Returns 2 when each
// rank's refusal names every rank's missing device.
int ranks_without_gpu(int ranks, const FabricSpec& spec) {
  ControlConfig base;
  base.ranks = ranks;
  base.root_port = 0;
  base.run_id = "nccl-one-rank-test";
  base.token = std::vector<unsigned char>(32, 0x5a);
  base.join_deadline = std::chrono::milliseconds(10'000);
  base.call_deadline = std::chrono::milliseconds(10'000);
  std::promise<uint16_t> listening;
  const auto run = [&spec](ControlConfig c) -> std::string {
    try {
      const auto group = ControlGroup::join(c);
      run_nccl_collectives(spec, *group, NcclRunSettings{});
      return "rank " + std::to_string(c.rank) + " ran without a GPU";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
  ControlConfig root = base;
  root.on_listening = [&listening](uint16_t port) { listening.set_value(port); };
  std::vector<std::future<std::string>> outcomes;
  outcomes.push_back(std::async(std::launch::async, run, root));
  const uint16_t port = listening.get_future().get();
  for (int r = 1; r < ranks; ++r) {
    ControlConfig c = base;
    c.rank = r;
    c.root_port = port;
    outcomes.push_back(std::async(std::launch::async, run, c));
  }
  bool all_named = true;
  for (int r = 0; r < ranks; ++r) {
    const std::string what = outcomes[static_cast<size_t>(r)].get();
    std::cerr << "rank " << r << ": " << what << "\n";
    for (int other = 0; other < ranks; ++other) {
      const std::string named = "rank " + std::to_string(other) + ": no CUDA device";
      all_named = all_named && what.find(named) != std::string::npos;
    }
  }
  return all_named ? 2 : 1;
}

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
    } else if (args.size() == 2 && args[0] == "--ranks-without-gpu") {
      try {
        const int devices = require_cuda_devices();
        std::cout << "a CUDA device is present (" << devices << "): not tested here\n";
        return 77;
      } catch (const NcclRunError&) {
      }
      return ranks_without_gpu(
          std::stoi(args[1]),
          FabricSpec::resolve(
              load_scenario(FABTWIN_SOURCE_DIR "/scenarios/nccl/all_reduce_sweep_2x8_ndr.json")));
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
    test::InProcessControl group(std::make_shared<test::InProcessHub>(1), 0);
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
