// Figures measured from a run's records: plain functions over RunResult, and one catalogue that
// names them (name, unit, meaning, the arguments they read) for `fabtwin validate`, the
// --json report's "metrics" and sweeps that choose metrics by name. A function throws
// std::runtime_error when the run has nothing to measure (no samples, a flow that did not
// complete) and ScenarioError when an argument names something the run lacks.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/fabric/run_result.h"

namespace fabtwin {

using FlowSet = std::vector<const FlowRecord*>;
using MetricGroups = std::map<std::string, double>;  // group name -> value

// --- Flows ---------------------------------------------------------------------------------------
FlowSet all_flows(const RunResult& r);
// By traffic generator ("0", "1", ...: the index of the scenario's `traffic` entry).
std::map<std::string, FlowSet> flows_by_generator(const RunResult& r);
// By message size: "<=10KB", "<=100KB", "<=1MB", "<=10MB", ">10MB" (decimal units).
std::map<std::string, FlowSet> flows_by_size(const RunResult& r);
const char* size_bucket(Bytes size);

int64_t completed_count(const FlowSet& flows);
// Nearest-rank percentile q (0..100) of the completed flows' FCT.
double fct_percentile_ps(const FlowSet& flows, double q);
// The ideal FCT: the message's bits at the line rate of its source host's port (no headers,
// no propagation). Slowdown = FCT / ideal FCT.
// Line rate of each host's port (host index = node id; ports are listed node by node).
std::vector<BitsPerSec> host_line_rates(const RunResult& r);
Time ideal_fct(const RunResult& r, const FlowRecord& f);
double slowdown_percentile(const RunResult& r, const FlowSet& flows, double q);
// Message bits of the completed flows over the time from the first one's start to the last
// one's completion.
double goodput_bps(const FlowSet& flows);
// Payload bits delivered in order (complete or not) from the first flow's start to the last
// event of the run.
double throughput_bps(const RunResult& r, const FlowSet& flows);
// goodput_bps of every flow, all of which must have completed.
double aggregate_goodput_bps(const RunResult& r);
// Jain's index of the flows' goodputs, all of which must have completed.
double jain_index_of_goodputs(const RunResult& r);
// Flow `id`, which must exist and have completed.
const FlowRecord& completed_flow(const RunResult& r, int64_t id);

// --- Congestion-control rates
// --------------------------------------------------------------------- Per flow with samples, the
// mean of its sampled rate from `after` on.
std::vector<double> mean_rates_bps(const RunResult& r, Time after);
double jain_index_of_rates(const RunResult& r, Time after);
// The first sample time from which Jain's index of the sampled rates stays >= 0.95.
Time rate_convergence_time(const RunResult& r);

// --- Ports, queues, PFC -------------------------------------------------------------------------
// Index into r.ports of `node`'s port `port`.
uint32_t port_index(const RunResult& r, const std::string& node, uint32_t port);
std::string port_name(const PortRecord& p);  // "leaf0:3"
// Time average of a port's sampled queue depth from `after` on.
double mean_queue_bytes(const RunResult& r, uint32_t port, Time after);
// A port's sampled queueing delays (queue bytes at its line rate) from `after` on, sorted.
std::vector<Time> queue_delays(const RunResult& r, uint32_t port, Time after);
double mean_queue_delay_us(const RunResult& r, uint32_t port, Time after);
// The `quantile` (0..1) of the sampled queueing delay, nearest rank.
double queue_delay_quantile_us(const RunResult& r, uint32_t port, Time after, double quantile);
double mean_max_queue_bytes(const RunResult& r, const std::string& node,
                            const std::vector<uint32_t>& ports);
int64_t max_switch_queue_bytes(const RunResult& r);
// Each port's time-averaged sampled queue depth, by port name (ports with samples).
MetricGroups mean_queue_bytes_by_port(const RunResult& r);
// The mean of the switch ports' time-averaged queue depths (those with samples).
double mean_switch_queue_bytes(const RunResult& r);
double port_utilization(const RunResult& r, uint32_t port);  // busy time / last event time
// Utilization of the sampled switch egress ports (/link_utilization), per group of links of
// the same tiers (PortRecord::link: "leaf->spine", ...). Imbalance is max over mean across the
// group's links: per sample (samples where the group carried anything; their maxima summed over
// their means summed, so that busy intervals weigh more), and over the whole run (each link's
// utilization averaged over every sample).
struct LinkGroupUtilization {
  int links = 0;
  int samples = 0;             // sampling intervals in which the group carried traffic
  double mean = 0;             // over those intervals and the group's links
  double imbalance_mean = 0;   // sum over those intervals of the max over sum of the mean
  double imbalance_worst = 0;  // the largest per-interval max/mean
  double imbalance_run = 0;    // max/mean of the links' utilization over the run
};
std::map<std::string, LinkGroupUtilization> link_utilization_by_group(const RunResult& r);

// Every port's counters together, each combined by its rule (summed, or the largest).
PriorityCounters counter_totals(const RunResult& r);
Time pause_time(const RunResult& r);  // summed over the PFC pause intervals
int64_t packets_retransmitted(const RunResult& r);
// A receiver counter (FlowRecord::out_of_sequence, ...) summed over the flows.
int64_t receiver_total(const RunResult& r, int64_t FlowRecord::*counter);
int64_t max_reorder_depth(const RunResult& r);

// --- Collectives ---------------------------------------------------------------------------------
// Collective row `row`, which must exist and have completed.
const CollectiveRow& completed_collective(const RunResult& r, int64_t row);
// log2 of the smallest size from which generator `ring` is faster than generator `tree` at every
// larger size of their common sweep.
double ring_tree_crossover_log2(const RunResult& r, uint32_t ring, uint32_t tree);

// --- The catalogue
// --------------------------------------------------------------------------------
struct Metric {
  std::string name;
  std::string unit;
  std::string args;  // the arguments it reads ("node, port, after?"); empty: none
  std::string meaning;
  // Exactly one is set: a single figure, or one per group (generator, size bucket, port).
  std::function<double(const RunResult&, const nlohmann::json& args)> value;
  std::function<MetricGroups(const RunResult&)> groups;
};

const std::vector<Metric>& metric_catalogue();
const Metric& find_metric(const std::string& name);  // ScenarioError("metric.name") if unknown
// A single-figure metric by name; `args` holds its arguments ({"node": ..., "port": ...}).
double measure_metric(const std::string& name, const RunResult& r,
                      const nlohmann::json& args = nlohmann::json::object());
// Every metric that reads no arguments: figures, or objects by group; null where the run has
// nothing to measure.
nlohmann::json metrics_json(const RunResult& r);

}  // namespace fabtwin
