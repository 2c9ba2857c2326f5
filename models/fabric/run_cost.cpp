#include "models/fabric/run_cost.h"

#include <algorithm>
#include <cstdio>

#include "models/fabric/fabric_spec.h"
#include "models/fabric/run_result.h"
#include "models/net/roce_framing.h"

namespace fabtwin {

namespace {

std::string printed(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char text[400];
  std::snprintf(text, sizeof text, format, a, b, c, d);
  return text;
}

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  for (; bytes >= 1000 && u < 5; ++u) bytes /= 1000;
  return printed("%.3g ", bytes) + units[u];
}

// A collective size as nccl-tests prints it: binary units.
std::string binary_size_text(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  for (; v >= 1024 && u < 4; ++u) v /= 1024;
  return printed("%.4g ", v) + units[u];
}

std::string ms_text(double ps) {
  return printed("%.3g ms", ps * 1e-9);
}

// A sampler that records `rows` records of `row_bytes` every `interval`: refused below the
// finest period, and a warning when it fills more than kSampleBytesPerMsWarning per simulated ms.
void check_sampler(const char* path, Time interval, double rows, size_t row_bytes, const char* what,
                   std::vector<std::string>& warnings) {
  if (interval.ps <= 0) return;  // off
  if (interval.ps < kMinSampleIntervalPs) {
    throw ScenarioError(path,
                        "expected at least 1ns (a frame takes longer; a finer period "
                        "only multiplies the samples), found " +
                            format_time(interval));
  }
  const double per_ms = 1e9 / static_cast<double>(interval.ps);
  const double bytes_per_ms = per_ms * rows * static_cast<double>(row_bytes);
  if (bytes_per_ms > kSampleBytesPerMsWarning) {
    warnings.push_back(std::string(path) + " = " + format_time(interval) + ": " +
                       printed("up to %.0f ", rows) + what +
                       printed(" sampled %.3g times per simulated ms, about ", per_ms) +
                       bytes_text(bytes_per_ms) +
                       " of samples per simulated ms until the traffic ends or run.end (raise "
                       "the period, or set it to \"0us\" to turn the samples off)");
  }
}

// No round trip is shorter than one link's delay each way plus a full frame on the fastest
// link: an ACK timeout below it fires before any ACK can come back, on every packet.
void check_ack_timeout(const FabricSpec& spec) {
  if (spec.topology.links.empty()) return;
  Time delay = Time::max();
  BitsPerSec fastest{0};
  for (const Link& l : spec.topology.links) {
    delay = std::min(delay, l.delay);
    fastest.bps = std::max(fastest.bps, l.rate.bps);
  }
  const int frame = roce::data_frame(static_cast<int>(spec.nic.mtu.count), false);
  const Time rtt = Time{2 * (delay.ps + roce::wire_time(frame, fastest).ps)};
  if (spec.nic.ack_timeout < rtt) {
    throw ScenarioError("nic.ack_timeout",
                        "expected at least the fabric's shortest round trip (" + format_time(rtt) +
                            ": no ACK can return sooner, so every packet would be "
                            "retransmitted until the run ends), found " +
                            format_time(spec.nic.ack_timeout));
  }
}

// NCCL's own model of a collective generator's whole sweep (every size, warm-up and measured
// iterations): a warning when it cannot be over by run.end.
void check_collectives(const FabricSpec& spec, std::vector<std::string>& warnings) {
  const CollectiveSetup& setup = spec.collectives;
  for (uint32_t s = 0; s < setup.specs.size(); ++s) {
    const CollectiveSpec& c = setup.specs[s];
    nccl::TuningInput tune = tuning_input(setup, spec.topology, s);
    double total_us = 0;
    int64_t first_late = -1;
    for (uint32_t op_index : setup.spec_ops[s]) {
      const CollectiveOp& op = setup.ops[op_index];
      tune.bytes = op.plan.bytes;
      nccl::Estimate e = nccl::estimate(tune, op.plan.algorithm, nccl::Protocol::Simple);
      if (e.time_us < 0) e = nccl::estimate(tune, nccl::Algorithm::Ring, nccl::Protocol::Simple);
      total_us += std::max(0.0, e.time_us) * (c.iterations + c.warmup) +
                  static_cast<double>(setup.barrier_latency[s].ps) * 1e-6;
      const double done_ps = static_cast<double>(c.start.ps) + total_us * 1e6;
      if (first_late < 0 && done_ps > static_cast<double>(spec.run.end.ps)) first_late = op.size;
    }
    if (first_late < 0) continue;
    warnings.push_back(
        "traffic[" + std::to_string(c.generator) + "]: NCCL's own model puts this collective's " +
        std::to_string(setup.spec_ops[s].size()) + " size(s) x " +
        std::to_string(c.iterations + c.warmup) + " iteration(s) at about " +
        ms_text(total_us * 1e6) + " from its start at " + ms_text(static_cast<double>(c.start.ps)) +
        ", beyond run.end = " + format_time(spec.run.end) + ": sizes from " +
        binary_size_text(first_late) +
        " on will not complete (raise run.end, or cut sizes or iterations)");
  }
}

}  // namespace

std::vector<std::string> check_run_cost(const FabricSpec& spec) {
  std::vector<std::string> warnings;
  double switch_ports = 0;
  for (int v = spec.topology.hosts; v < static_cast<int>(spec.topology.nodes.size()); ++v) {
    switch_ports += spec.topology.nodes[v].ports;
  }
  check_sampler("output.queue_sample_interval", spec.output.queue_sample_interval, switch_ports,
                sizeof(QueueDepthSample), "switch ports", warnings);
  if (spec.nic.cc.algorithm != CcAlgorithm::None) {
    // At most one rate sample per queue pair that is sending.
    const double qps = static_cast<double>(spec.flows.size() + spec.collectives.connections.size());
    check_sampler("output.rate_sample_interval", spec.output.rate_sample_interval,
                  std::min(qps, 1e9), sizeof(RateSampleRecord), "sending queue pairs", warnings);
  }
  check_ack_timeout(spec);
  check_collectives(spec, warnings);
  return warnings;
}

}  // namespace fabtwin
