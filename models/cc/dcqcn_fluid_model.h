// Fixed point of the DCQCN fluid model: the steady state that N identical long-lived DCQCN
// flows sharing one RED/ECN-marking bottleneck settle at, if they settle at all.
//
// Model: Zhu, Ghobadi, Misra, Padhye, "ECN or Delay: Lessons Learnt from Analysis of DCQCN
// and TIMELY", CoNEXT 2016: the DCQCN fluid model and the fixed-point theorem of its
// stability analysis (docs/references.md sections 1.4-1.5). At the fixed point every flow sends
// at R_C* = C/N, and the marking probability p* is the root of
//     a^2 alpha* / ((b + d)(c + e)) = tau^2 R_AI R_C*
// with a = 1-(1-p)^(tau R_C*), alpha* = 1-(1-p)^(tau' R_C*), b = p/((1-p)^-B - 1),
// c = (1-p)^(F B) b, d = p/((1-p)^(-T R_C*) - 1), e = (1-p)^(F T R_C*) d.
// The queue follows from inverting RED, q* = Kmin + (p*/Pmax)(Kmax - Kmin), and the target rate
// from dR_T/dt = 0, R_T* = R_C*(1 + (c + e) tau R_AI / a).
//
// The model's probabilities are per packet, so p* depends on the packet size chosen: the
// authors count in 1000-byte packets. Inputs are SI (bits/s, bytes, seconds) plus that packet
// size; everything is converted to packets and packets/s inside.
//
// The fixed point says nothing about stability: with a long feedback delay the fluid model
// (and a simulator) can oscillate around it instead of converging (paper: N = 10, 85 us).
// dcqcn_trajectory integrates the model's delay-differential equations over time to show which.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace fabtwin {

struct DcqcnFluidParams {
  double capacity_bps;  // C, bottleneck capacity
  int flows;            // N, identical long-lived flows through the bottleneck
  double packet_bytes;  // packet size the model counts in (e.g. payload + headers)
  double kmin_bytes;    // RED marking starts above this queue
  double kmax_bytes;    // RED marking probability reaches pmax here
  double pmax;          // marking probability at kmax (0 < pmax <= 1)
  double g;             // alpha gain; the fixed point does not depend on it, the trajectory does
  double tau_s;         // CNP interval tau (50 us)
  double tau_prime_s;   // alpha update interval tau' (55 us)
  double timer_s;       // rate-increase timer T
  double byte_counter_bytes;  // rate-increase byte counter B
  int fast_recovery;          // F, fast-recovery stages before additive increase
  double rate_ai_bps;         // R_AI, additive-increase step
};

struct DcqcnFixedPoint {
  double p;                // p*, per-packet marking probability (exact root)
  double queue_bytes;      // q*, bottleneck queue
  double alpha;            // alpha*
  double rate_bps;         // R_C* = C/N, each flow's current rate
  double target_rate_bps;  // R_T*, each flow's target rate
  double p_taylor;         // the paper's small-p approximation of p*, for comparison
};

// The paper's closed-form estimate p* ~ cbrt(R_AI N^2 / (tau' C^2) (1/B + N/(T C))^2), valid
// while B p*, T R_C* p* and their F-fold multiples are small.
double dcqcn_taylor_p(const DcqcnFluidParams&);

// Solves for p* in (0, pmax]. Throws std::invalid_argument for non-physical parameters and
// std::runtime_error when p* > pmax (the queue would sit above Kmax, where RED marks every
// packet and the model's linear marking no longer holds) or when no root can be bracketed.
DcqcnFixedPoint dcqcn_fixed_point(const DcqcnFluidParams&);

// The time integration of the model's delay-differential equations (docs/references.md §1.4)
// for flows that may start at different times and may be finite. Per flow i, with p' and R'_i
// the marking probability and flow i's current rate one control-loop delay tau* ago:
//   dq/dt     = sum_i R_C,i - C                      (q clamped at 0)
//   dalpha_i  = g/tau' (1 - (1-p')^(tau' R'_i) - alpha_i)
//   dR_T,i    = -(R_T,i - R_C,i) a'_i / tau + R_AI R'_i ((1-p')^(F B) b' + (1-p')^(F T R'_i) d'_i)
//   dR_C,i    = -R_C,i alpha_i a'_i / (2 tau) + (R_T,i - R_C,i)/2 R'_i (b' + d'_i)
// with a' = 1 - (1-p')^(tau R'), b' = p'/((1-p')^-B - 1), d' = p'/((1-p')^(-T R') - 1) and
// p = RED(q): 0 up to Kmin, linear to Pmax at Kmax, 1 above. R_C and R_T are clamped to
// [0, line rate] and alpha to [0, 1] after every step, as the authors' integrator clamps them.
struct DcqcnFluidFlow {
  double start_s = 0;  // the flow enters at line rate, alpha = initial_alpha
  double packets = std::numeric_limits<double>::infinity();  // it stops once it has sent these
};

struct DcqcnTrajectoryParams {
  DcqcnFluidParams model;             // C, RED, the DCQCN constants and g (model.flows is not used)
  std::vector<DcqcnFluidFlow> flows;  // one entry per flow
  double line_rate_bps;               // a flow's rate at start and its ceiling
  double initial_alpha;               // alpha of a flow when it starts, in [0, 1]
  double delay_s;                     // tau*, the control-loop delay (>= 0)
  double duration_s;                  // integrate over [0, duration]
  double step_s;                      // the largest step; the step used divides sample_s
  double sample_s;                    // output interval
};

// The trajectory at t_j = j * sample_s, j = 0 .. samples-1 (the last sample at or before the
// duration). Per-flow arrays are sample-major: value of flow i at sample j is [j * flows + i].
// A flow that has not started (or has finished) has rate and target 0.
struct DcqcnTrajectory {
  double step_s = 0;  // the step the integrator took
  int flows = 0;
  size_t samples = 0;
  std::vector<double> queue_bytes;          // [samples]
  std::vector<double> marking_probability;  // [samples], RED at that queue
  std::vector<double> arrival_bps;          // [samples], sum of the flows' R_C
  std::vector<double> rate_bps;             // [samples * flows], R_C
  std::vector<double> target_bps;           // [samples * flows], R_T
  std::vector<double> alpha;                // [samples * flows]
  std::vector<double> start_s;              // [flows], the step at which each flow started
  std::vector<double> finish_s;             // [flows], when it sent its last packet; -1 if not

  double time_s(size_t sample, double sample_s) const { return sample * sample_s; }
  bool active(size_t sample, int flow, double sample_s) const;
};

// Integrates with Heun's method (explicit trapezoid) at a fixed step; the delayed terms are
// interpolated linearly in a history of each flow's feedback coefficients kept for tau* (when
// tau* is shorter than a step, between the last point and the predictor). Allocates the output
// and the history up front and nothing per step; deterministic. Flows with the same start and
// size follow one trajectory, which is integrated once and counted once per flow in the queue.
// Throws std::invalid_argument for non-physical parameters.
DcqcnTrajectory dcqcn_trajectory(const DcqcnTrajectoryParams&);

// Time averages and extremes of a trajectory over [after_s, end].
struct DcqcnTrajectorySummary {
  double window_start_s = 0, window_end_s = 0;
  double mean_queue_bytes = 0, min_queue_bytes = 0, max_queue_bytes = 0;
  double mean_marking_probability = 0;
  double utilization = 0;      // mean output rate over C: C while the queue is non-empty
  double amplitude_bytes = 0;  // (max - min) / 2 of the queue
  double period_s = 0;         // mean time between upward crossings of the mean queue; 0 if < 2
  bool oscillating = false;    // amplitude above 10% of the mean queue (and above a packet)
  std::vector<double> mean_rate_bps, mean_target_bps, mean_alpha;  // per flow
};

DcqcnTrajectorySummary summarize(const DcqcnTrajectory&, const DcqcnTrajectoryParams&,
                                 double after_s);

}  // namespace fabtwin
