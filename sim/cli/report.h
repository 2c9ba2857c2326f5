// The three views of a run's results: the human summary, the JSON report and the HDF5 file.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>

#include "models/fabric/run_result.h"

namespace fabtwin {

inline constexpr const char* kVersion = FABTWIN_VERSION;
inline constexpr int kHdf5SchemaVersion = 4;

// Figures shared by all three views, computed once.
struct RunFigures {
  int64_t flows = 0, completed = 0;
  double fct_p50_ps = 0, fct_p99_ps = 0, fct_max_ps = 0;
  // The traffic's makespan: from the first flow's start to the last completion (0: none).
  int64_t makespan_ps = 0;
  double goodput_p50_bps = 0, goodput_min_bps = 0, goodput_max_bps = 0;
  int64_t drops = 0, drops_egress = 0, drops_headroom = 0;
  int64_t drops_ttl = 0, drops_link_down = 0, drops_unroutable = 0;
  int64_t ports_with_headroom_overflow = 0;
  int64_t pause_sent = 0, xon_sent = 0, xoff_transitions = 0, pause_received = 0;
  double paused_ps = 0;  // summed over egress queues
  int64_t ports_paused = 0;
  int64_t ecn_marks = 0;
  int64_t peak_buffer_bytes = 0, buffer_bytes = 0;
  std::string peak_buffer_switch;
  int64_t retransmitted = 0, timeouts = 0;
  int64_t cnps_sent = 0, cnps_received = 0, rate_cuts = 0;
  int64_t max_queue_bytes = 0;
  double events_per_second = 0, data_packets_per_second = 0;
};
RunFigures run_figures(const RunResult& r);

void print_summary(const RunResult& r, std::ostream& out);
nlohmann::json json_report(const RunResult& r);
void write_json_report(const RunResult& r, const std::filesystem::path& file);
void write_hdf5(const RunResult& r, const std::filesystem::path& file);
// The HDF5 tables' fields as Markdown tables between markers; given `doc` (the text of
// docs/hdf5-schema.md), that text with its generated tables brought up to date; nothing is
// printed, and std::runtime_error names the line, when a generated table in it has no end.
void print_hdf5_schema(std::ostream& out, const std::string& doc = "");

std::string hex64(uint64_t v);

}  // namespace fabtwin
