// A reduction-kernel throughput probe: how fast this GPU sums float buffers elementwise (the
// reduce step of NCCL's ring and tree algorithms, out = in_0 + ... + in_{k-1}), per buffer size.
// The figure is a calibration input for the simulator's GPU model: how long reducing a chunk
// takes beside moving it. Built only when CUDA kernels can be compiled
// (FABTWIN_HAVE_CUDA_LANGUAGE).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace fabtwin::hw {

struct ReduceMeasurement {
  std::size_t bytes = 0;  // size of each buffer
  int inputs = 2;
  int iterations = 0;
  double seconds = 0;  // mean time of one reduction (CUDA events)
  // (inputs + 1) * bytes moved through device memory per reduction, over `seconds`, in GB/s
  // (1e9 B/s); nccl-tests' busbw of a local reduction is of this kind.
  double memory_gbps = 0;
  double max_abs_error = 0;  // against the host's sum of the same inputs
};

class ReduceProbeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The number of GPUs the CUDA runtime sees, or throws ReduceProbeError with its error.
int reduce_probe_devices();

// Runs the probe on `device` for each size: warm-up, then `iterations` timed launches; checks
// the result against the host. Throws ReduceProbeError on a CUDA error.
std::vector<ReduceMeasurement> run_reduce_probe(int device, const std::vector<std::size_t>& sizes,
                                                int inputs = 2, int iterations = 20);

}  // namespace fabtwin::hw
