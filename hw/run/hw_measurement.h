// The measurement file of a hardware run (`fabtwin-hw run --out`): the simulator's schema with
// source = hardware. /flows has a simulated run's FlowRecord rows (what hardware cannot count
// per flow is -1), and the /hw group holds what only hardware has: its properties, every
// message's timings (/hw/messages) and each connection's bytes and latency percentiles
// (/hw/qps), beside the hosts' observation tables when they were taken.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/nccl/nccl_results.h"
#include "hw/run/data_transport.h"
#include "hw/run/plan.h"
#include "models/traffic/flow.h"
#include "sim/cli/import.h"
#include "sim/hdf5_file.h"
#include "sim/record_field.h"

namespace fabtwin::hw {

// /hw/messages: one message of the plan, as its source and its destination timed it.
struct MessageRow {
  uint32_t flow = 0, connection = 0;
  int src_host = 0, dst_host = 0, src_rank = 0, dst_rank = 0, qp = 0;
  int64_t bytes = 0;
  Time start{};               // planned offset from the common start
  int64_t posted_ns = -1;     // source clock, from the common start
  int64_t completed_ns = -1;  // source: acknowledgement of the last byte; -1: not completed
  int64_t received_ns = -1;   // destination clock: the last byte arrived (when `received`)
  bool received = false;
  bool completed = false;
};

constexpr auto record_fields(std::type_identity<MessageRow>) {
  return std::tuple{
      field("flow", &MessageRow::flow, "", "Flow id (`/flows`)."),
      field("connection", &MessageRow::connection, "", "Row of `/hw/qps`."),
      field("src", &MessageRow::src_host, "", "Source scenario host."),
      field("dst", &MessageRow::dst_host, "", "Destination scenario host."),
      field("src_rank", &MessageRow::src_rank, "", "Process that sent it."),
      field("dst_rank", &MessageRow::dst_rank, "", "Process that received it."),
      field("qp", &MessageRow::qp, "",
            "Which of the pair's `nic.qps_per_flow` connections carried it."),
      field("bytes", &MessageRow::bytes, "B", "Payload bytes (the flow's share on this QP)."),
      field("start_ps", &MessageRow::start, "ps", "Planned post time, from the common start."),
      field("posted_ns", &MessageRow::posted_ns, "ns",
            "When the source posted it, on its clock (CLOCK_MONOTONIC_RAW) from the common "
            "start; -1 if never posted."),
      field("completed_ns", &MessageRow::completed_ns, "ns",
            "When the source saw the last byte acknowledged (RC ACK, or the TCP receiver's "
            "acknowledgement); -1 if not before the deadline."),
      field("received_ns", &MessageRow::received_ns, "ns",
            "When the last byte arrived, on the destination's clock from its own common start "
            "(negative when it arrived before the destination's start: the processes leave the "
            "barrier up to a control-network delay apart); -1 when not `received`."),
      field("received", &MessageRow::received, "0/1",
            "1 if the destination saw the last byte (a TCP receiver does; an RDMA WRITE's "
            "destination cannot tell, 0)."),
      field("completed", &MessageRow::completed, "0/1", "1 if completed before the deadline."),
  };
}

// /hw/qps: one connection (queue pair or socket) of the plan.
struct QpRow {
  uint32_t connection = 0;
  int src_host = 0, dst_host = 0, src_rank = 0, dst_rank = 0, qp = 0, dscp = 0;
  int64_t bytes_sent = 0, messages = 0, messages_completed = 0;
  int64_t latency_p50_ns = -1, latency_p99_ns = -1, latency_p999_ns = -1, latency_max_ns = -1;
};

constexpr auto record_fields(std::type_identity<QpRow>) {
  return std::tuple{
      field("connection", &QpRow::connection, "", "Connection id of the plan."),
      field("src", &QpRow::src_host, "", "Source scenario host."),
      field("dst", &QpRow::dst_host, "", "Destination scenario host."),
      field("src_rank", &QpRow::src_rank, "", "Process of the source end."),
      field("dst_rank", &QpRow::dst_rank, "", "Process of the destination end."),
      field("qp", &QpRow::qp, "", "Index among the pair's `nic.qps_per_flow` connections."),
      field("dscp", &QpRow::dscp, "", "DSCP of its flows (the traffic class is DSCP << 2)."),
      field("bytes_sent", &QpRow::bytes_sent, "B", "Payload bytes the source handed over."),
      field("messages", &QpRow::messages, "", "Messages planned on it."),
      field("messages_completed", &QpRow::messages_completed, "", "Of those, completed."),
      field("latency_p50_ns", &QpRow::latency_p50_ns, "ns",
            "Median of completed - posted over its completed messages (nearest rank); -1 if "
            "none."),
      field("latency_p99_ns", &QpRow::latency_p99_ns, "ns", "99th percentile of the same."),
      field("latency_p999_ns", &QpRow::latency_p999_ns, "ns", "99.9th percentile of the same."),
      field("latency_max_ns", &QpRow::latency_max_ns, "ns", "Largest of the same."),
  };
}

// An observation table of the hosts (counters, settings; hw/observe), written as given.
struct ObservationTable {
  std::string name;  // "hw/counters"
  std::function<void(Hdf5File&)> write;
  std::function<nlohmann::json()> json;
};

struct HwMeasurement {
  std::string scenario_text, scenario_file, plan_hash, transport, mapping;
  uint64_t seed = 0;
  int ranks = 1;
  double wall_seconds = 0;
  std::string stop_reason;  // "" or "deadline"
  std::vector<FlowRecord> flows;
  std::vector<HwProperty> properties;
  std::vector<MessageRow> messages;
  std::vector<QpRow> qps;
  std::vector<ObservationTable> observations;
  CollectiveMeasurement collectives;  // the collective generators run through NCCL (rank 0's)
  std::string run_id;

  int64_t flows_completed() const;
};

// Rank 0's view of the run: every rank's transport result (in rank order) put together with
// the plan and the scenario's flows.
HwMeasurement assemble_measurement(const Plan& plan, const std::vector<FlowSpec>& flows,
                                   const std::vector<TransportResult>& results);

void write_measurement_hdf5(const HwMeasurement& m, const std::filesystem::path& file);
nlohmann::json measurement_json(const HwMeasurement& m);

// A transport result as JSON text for the control group's gather, and back (every field
// checked; throws std::runtime_error naming the rank and the field).
nlohmann::json transport_result_json(const TransportResult& r);
TransportResult transport_result_from_json(const nlohmann::json& j, int rank);

// The datasets of /hw, in file order: visit(name, rows).
template <class Visit>
void for_each_hw_table(const HwMeasurement& m, Visit&& visit) {
  visit("hw/properties", m.properties);
  visit("hw/messages", m.messages);
  visit("hw/qps", m.qps);
}

// The tables of the collectives run through NCCL, where a simulated run has them, and NCCL's
// own in /hw (present when the scenario had collective generators and they ran).
template <class Visit>
void for_each_collective_table(const CollectiveMeasurement& c, Visit&& visit) {
  visit("collectives/results", c.rows);
  visit("collectives/rank_gpus", c.rank_gpus);
  visit("collectives/gpus", c.gpus);
  visit("hw/nccl_rank_times", c.rank_times);
  visit("hw/nccl_info", c.nccl_info);
}

}  // namespace fabtwin::hw
