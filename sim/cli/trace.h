// A run's timeline as a Chrome trace-event file (JSON Object Format), for ui.perfetto.dev or
// chrome://tracing: the collectives (every step of every rank's channel, every transfer on every
// connection, one span per nccl-tests row) and the network (PFC pause intervals per port and
// priority, queue depth per port, link failures, and each deadlock's cycle).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "models/fabric/run_result.h"

namespace fabtwin {

// Process ids of the trace: the rows, each GPU, each channel's transfers.
inline constexpr int kTraceRowsPid = 0;
inline int trace_gpu_pid(uint32_t gpu) {
  return static_cast<int>(gpu) + 1;
}
inline int trace_transfer_pid(uint16_t channel) {
  return 100000 + channel;
}
// A GPU's thread for one channel's lane (lane 1: the tree broadcast).
inline int trace_step_tid(uint16_t channel, uint16_t lane) {
  return channel * 2 + lane + 1;
}

// The network: a process per node, a thread per (port, priority) for its pause intervals; one
// process for the link failures and the deadlocks found.
inline constexpr int kTraceLinksPid = 199999;
inline int trace_network_pid(uint32_t node_ordinal) {
  return 200000 + static_cast<int>(node_ordinal);
}
inline int trace_pause_tid(uint32_t port, uint8_t priority) {
  return static_cast<int>(port) * 8 + priority + 1;
}
// The time a deadlocked queue was stuck, beside its pauses.
inline int trace_stuck_tid(uint32_t port, uint8_t priority) {
  return 100000 + trace_pause_tid(port, priority);
}

// {"traceEvents": [...], "displayTimeUnit": "ns"}, events sorted by pid, tid and time, metadata
// (process and thread names) first. Times are microseconds, the format's unit.
nlohmann::json trace_json(const RunResult& r);

// Writes trace_json(r) to `file`, atomically. A run with nothing to show gives a valid, empty
// trace.
void write_trace(const RunResult& r, const std::filesystem::path& file);

}  // namespace fabtwin
