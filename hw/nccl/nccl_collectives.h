// The scenario's collective generators run through NCCL like nccl-tests runs them: one process
// per GPU, rank 0's ncclUniqueId shipped to every rank over fabtwin's authenticated control
// group, cudaSetDevice(local rank), ncclCommInitRank; per size, the generator's warm-up
// iterations, then (after a barrier) a host steady clock around its timed iterations' launches
// and the stream's completion; the per-rank times gathered to rank 0 and averaged, algbw and
// busbw as nccl-tests computes them; NCCL's algorithm, protocol and channels read from its
// debug output (NCCL_DEBUG=INFO written to a file). docs/hardware.md, "NCCL collectives";
// docs/references.md §10.7.
#pragma once

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "hw/control/control_group.h"
#include "hw/nccl/nccl_results.h"
#include "models/fabric/fabric_spec.h"

namespace fabtwin::hw {

// A collective run that cannot go on: no CUDA device, a failed CUDA or NCCL call (named, with
// NCCL's last error), a generator whose ranks do not match the job's processes, a timeout.
class NcclRunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NcclRunSettings {
  int device = -1;  // CUDA device; -1: the process's local rank among the ranks on its host
  // Where NCCL's debug file goes; empty: the temporary directory, and the file is removed
  // once read.
  std::filesystem::path debug_dir;
  std::string debug_subsys = "INIT,TUNING,GRAPH,ENV,NET";
  std::chrono::seconds timeout{300};  // one size's warm-up or timed loop
};

// Runs every collective generator of `spec` (each needs as many ranks as the group has
// processes). Every rank calls it; rank 0 returns the rows of every rank, the others their own
// times. Throws NcclRunError (on every rank: a rank's failure to start is shared first).
CollectiveMeasurement run_nccl_collectives(const FabricSpec& spec, ControlGroup& group,
                                           const NcclRunSettings& settings);

// The CUDA devices this process sees; throws NcclRunError "no CUDA device: cudaGetDeviceCount
// returned N (reason)" when there are none.
int require_cuda_devices();

}  // namespace fabtwin::hw
