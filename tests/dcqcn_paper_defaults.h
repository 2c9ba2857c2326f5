// The CoNEXT 2016 DCQCN defaults (docs/references.md §1.4-1.5) as fluid-model parameters, counted
// in the authors' 1000-byte packets: shared by the tests of the fixed point and the trajectory.
#pragma once

#include "models/cc/dcqcn_fluid_model.h"

namespace fabtwin {

inline DcqcnFluidParams paper_defaults(double capacity_bps, int flows) {
  DcqcnFluidParams p;
  p.capacity_bps = capacity_bps;
  p.flows = flows;
  p.packet_bytes = 1000;
  p.kmin_bytes = 5e3;
  p.kmax_bytes = 200e3;
  p.pmax = 0.01;
  p.g = 1.0 / 256;
  p.tau_s = 50e-6;
  p.tau_prime_s = 55e-6;
  p.timer_s = 55e-6;
  p.byte_counter_bytes = 10e6;
  p.fast_recovery = 5;
  p.rate_ai_bps = 40e6;
  return p;
}

}  // namespace fabtwin
