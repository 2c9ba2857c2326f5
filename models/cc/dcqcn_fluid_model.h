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
#pragma once

namespace fabtwin {

struct DcqcnFluidParams {
  double capacity_bps;        // C, bottleneck capacity
  int flows;                  // N, identical long-lived flows through the bottleneck
  double packet_bytes;        // packet size the model counts in (e.g. payload + headers)
  double kmin_bytes;          // RED marking starts above this queue
  double kmax_bytes;          // RED marking probability reaches pmax here
  double pmax;                // marking probability at kmax (0 < pmax <= 1)
  double g;                   // alpha gain; the fixed point does not depend on it
  double tau_s;               // CNP interval tau (50 us)
  double tau_prime_s;         // alpha update interval tau' (55 us)
  double timer_s;             // rate-increase timer T
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

}  // namespace fabtwin
