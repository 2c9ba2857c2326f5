// The HDF5 result file; layout documented in docs/hdf5-schema.md (schema version 4). Every
// table is a list of records written by its field table (sim/cli/record_columns.h).
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

#include "sim/atomic_file.h"
#include "sim/cli/collective_rows.h"
#include "sim/cli/fluid.h"
#include "sim/cli/hdf5_table.h"
#include "sim/cli/import.h"
#include "sim/cli/record_columns.h"
#include "sim/cli/report.h"
#include "sim/hdf5_file.h"
#include "validate/calibration/calibration_report.h"

namespace fabtwin {
namespace {

// /port_priority: one row per (port, priority) that did something.
struct PortPriorityRow {
  uint32_t port_index = 0;
  uint8_t priority = 0;
  PriorityCounters counters;
};

constexpr auto record_fields(std::type_identity<PortPriorityRow>) {
  return std::tuple{
      field("port_index", &PortPriorityRow::port_index, "", "Row of `/ports`."),
      field("priority", &PortPriorityRow::priority, "", "Priority (traffic class), 0..7."),
      field("counters", &PortPriorityRow::counters, "", "The counters of this priority."),
  };
}

std::vector<PortPriorityRow> port_priority_rows(const RunResult& r) {
  std::vector<PortPriorityRow> rows;
  for (size_t i = 0; i < r.ports.size(); ++i) {
    for (int prio = 0; prio < kPriorities; ++prio) {
      const PriorityCounters& c = r.ports[i].counters[prio];
      if (c.tx_packets == 0 && c.drops == 0 && c.pause_sent == 0 && c.pause_received == 0 &&
          c.cnp_received == 0) {
        continue;
      }
      rows.push_back({static_cast<uint32_t>(i), static_cast<uint8_t>(prio), c});
    }
  }
  return rows;
}

std::vector<RankGpuRow> rank_gpu_rows(const RunResult& r) {
  std::vector<RankGpuRow> rows;
  for (size_t i = 0; i < r.collectives.size(); ++i) {
    const CollectiveRow& c = r.collectives[i];
    for (size_t rank = 0; rank < c.gpus.size(); ++rank) {
      rows.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(rank), c.gpus[rank]});
    }
  }
  return rows;
}

std::vector<GpuRow> gpu_rows(const RunResult& r) {
  std::vector<GpuRow> rows;
  for (const std::string& g : r.gpus) rows.push_back({g});
  return rows;
}

// The datasets, in file order: visit(name, rows).
template <class Visit>
void for_each_table(const RunResult& r, Visit&& visit) {
  visit("flows", r.flows);
  visit("qp_rates", r.rate_samples);
  visit("ports", r.ports);
  visit("port_priority", port_priority_rows(r));
  visit("pfc_pauses", r.pauses);
  visit("buffers", r.buffers);
  visit("buffer_occupancy", r.buffer_samples);
  visit("queue_depth", r.queue_samples);
  visit("link_utilization", r.link_samples);
  visit("link_events", r.link_events);
  visit("unreachable", r.unreachable);
}

// The /collectives group, present when the run had collectives.
template <class Visit>
void for_each_collective_table(const RunResult& r, Visit&& visit) {
  visit("collectives/results", r.collectives);
  visit("collectives/rank_gpus", rank_gpu_rows(r));
  visit("collectives/gpus", gpu_rows(r));
  visit("collectives/iterations", r.collective_iterations);
  visit("collectives/steps", r.collective_steps);
  visit("collectives/transfers", r.collective_transfers);
}

// The /deadlock group: what the runtime deadlock detector found (empty tables when nothing).
template <class Visit>
void for_each_deadlock_table(const RunResult& r, Visit&& visit) {
  visit("deadlock/deadlocks", r.deadlock.deadlocks);
  visit("deadlock/cycles", r.deadlock.cycles);
  visit("deadlock/flows", r.deadlock.flows);
  visit("deadlock/storms", r.deadlock.storms);
}

// The datasets of a fluid-model file (`fabtwin fluid --out`), in file order; /qp_rates has the
// rows of a run's /qp_rates.
template <class Visit>
void for_each_fluid_table(const FluidResult& r, Visit&& visit) {
  visit("fluid_queue", r.queue_rows());
}

void write_contents(const RunResult& r, const std::filesystem::path& path) {
  Hdf5File h5(path.string());
  h5.attribute("fabtwin_version", std::string(kVersion));
  h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
  h5.attribute("source", std::string("simulation"));
  h5.attribute("scenario", r.scenario_text);
  h5.attribute("scenario_file", r.scenario_file);
  h5.attribute("seed", r.seed);
  h5.attribute("fingerprint", hex64(r.fingerprint));
  h5.attribute("events", r.events);
  h5.attribute("end_time_ps", r.end_time.ps);
  h5.attribute("last_event_time_ps", r.last_event_time.ps);
  h5.attribute("reached_end", int64_t{r.reached_end ? 1 : 0});
  h5.attribute("stop_reason", r.stop_reason);
  h5.attribute("stop_time_ps", r.stop_reason.empty() ? int64_t{-1} : r.stop_time.ps);
  h5.attribute("data_packets_sent", r.data_packets_sent);
  h5.attribute("wall_seconds", r.wall_seconds);
  h5.attribute("congestion_control", r.congestion_control);
  const auto write = [&](const std::string& name, const auto& rows) {
    write_table(h5, name, rows);
  };
  for_each_table(r, write);
  h5.attribute("deadlock_detection_time_ps",
               r.deadlock.enabled ? r.deadlock.detection_time.ps : int64_t{-1});
  h5.attribute("deadlock_check_interval_ps",
               r.deadlock.enabled ? r.deadlock.check_interval.ps : int64_t{-1});
  h5.group("deadlock");
  for_each_deadlock_table(r, write);
  if (!r.collectives.empty()) {
    h5.group("collectives");
    for_each_collective_table(r, write);
  }
  // Written last: a file that has it was written whole by the run it names.
  h5.attribute("run_id", r.run_id);
  h5.close();
}

void write_fluid_contents(const FluidResult& r, const std::filesystem::path& path) {
  Hdf5File h5(path.string());
  const FluidBottleneck& b = r.bottleneck;
  const DcqcnFluidParams& p = b.model;
  const FluidSetup& s = r.setup;
  h5.attribute("fabtwin_version", std::string(kVersion));
  h5.attribute("schema_version", int64_t{kHdf5SchemaVersion});
  h5.attribute("source", std::string("fluid"));
  h5.attribute("scenario", r.scenario_text);
  h5.attribute("scenario_file", r.scenario_file);
  h5.attribute("flows", int64_t{p.flows});
  h5.attribute("receiver", int64_t{b.receiver});
  h5.attribute("capacity_bps", p.capacity_bps);
  h5.attribute("line_rate_bps", b.line_rate_bps);
  h5.attribute("packet_bytes", p.packet_bytes);
  h5.attribute("kmin_bytes", p.kmin_bytes);
  h5.attribute("kmax_bytes", p.kmax_bytes);
  h5.attribute("pmax", p.pmax);
  h5.attribute("g", p.g);
  h5.attribute("tau_s", p.tau_s);
  h5.attribute("tau_prime_s", p.tau_prime_s);
  h5.attribute("timer_s", p.timer_s);
  h5.attribute("byte_counter_bytes", p.byte_counter_bytes);
  h5.attribute("fast_recovery", int64_t{p.fast_recovery});
  h5.attribute("rate_ai_bps", p.rate_ai_bps);
  h5.attribute("initial_alpha", b.initial_alpha);
  h5.attribute("delay_ps", s.delay.ps);
  h5.attribute("base_rtt_ps", b.base_rtt.ps);
  h5.attribute("duration_ps", s.duration.ps);
  h5.attribute("step_ps", static_cast<int64_t>(std::llround(r.trajectory.step_s * 1e12)));
  h5.attribute("sample_ps", s.sample.ps);
  h5.attribute("fixed_point_queue_bytes", r.fixed_point ? r.fixed_point->queue_bytes : -1.0);
  h5.attribute("fixed_point_p", r.fixed_point ? r.fixed_point->p : -1.0);
  h5.attribute("fixed_point_alpha", r.fixed_point ? r.fixed_point->alpha : -1.0);
  h5.attribute("fixed_point_rate_bps", r.fixed_point ? r.fixed_point->rate_bps : -1.0);
  h5.attribute("fixed_point_target_bps", r.fixed_point ? r.fixed_point->target_rate_bps : -1.0);
  h5.attribute("wall_seconds", r.wall_seconds);
  const auto write = [&](const std::string& name, const auto& rows) {
    write_table(h5, name, rows);
  };
  for_each_fluid_table(r, write);
  write_table(h5, "qp_rates", r.rate_rows());
  h5.attribute("run_id", r.run_id);
  h5.close();
}

constexpr const char* kBegin = "<!-- generated by `fabtwin describe --hdf5-schema`: ";
constexpr const char* kEnd = "<!-- end of generated table -->";

// Each table's fields as a Markdown table between the markers, by dataset name.
std::vector<std::pair<std::string, std::string>> schema_blocks() {
  std::vector<std::pair<std::string, std::string>> blocks;
  const auto block = [&](const std::string& name, const auto& rows) {
    using R = typename std::decay_t<decltype(rows)>::value_type;
    std::ostringstream out;
    out << kBegin << "/" << name << " -->\n";
    out << "| Field | Type | Unit | Meaning |\n|---|---|---|---|\n";
    for (const Column<R>& c : columns_of<R>()) {
      out << "| `" << c.name << "` | " << cell_type_text(c.type, c.text_length) << " | " << c.unit
          << (c.unit.empty() ? "" : " ") << "| " << c.meaning << " |\n";
    }
    out << kEnd << "\n";
    blocks.emplace_back("/" + name, out.str());
  };
  const RunResult none;
  for_each_table(none, block);
  for_each_deadlock_table(none, block);
  for_each_collective_table(none, block);
  for_each_fluid_table(FluidResult{}, block);
  for_each_measurement_table(MeasurementFile{}, block);
  calibration::for_each_calibration_table(calibration::Report{}, block);
  return blocks;
}

}  // namespace

void write_hdf5(const RunResult& r, const std::filesystem::path& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) { write_contents(r, temp); });
}

void write_fluid_hdf5(const FluidResult& r, const std::filesystem::path& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) { write_fluid_contents(r, temp); });
}

void print_hdf5_schema(std::ostream& out, const std::string& doc) {
  const auto blocks = schema_blocks();
  if (doc.empty()) {
    for (const auto& [name, text] : blocks) out << text;
    return;
  }
  // The doc with each generated block replaced by the current one of its dataset; blocks the
  // doc lacks come at the end. Printed only once the whole doc has been read.
  std::map<std::string, std::string> unused(blocks.begin(), blocks.end());
  std::ostringstream updated;
  std::istringstream in(doc);
  std::string line;
  int number = 0, opened = 0;
  while (std::getline(in, line)) {
    ++number;
    if (opened == 0 && line.rfind(kBegin, 0) == 0) {
      opened = number;
      const std::string name =
          line.substr(std::strlen(kBegin), line.find(" -->") - std::strlen(kBegin));
      if (const auto it = unused.find(name); it != unused.end()) {
        updated << it->second;
        unused.erase(it);
      }
    } else if (opened > 0) {
      if (line == kEnd) opened = 0;
    } else {
      updated << line << "\n";
    }
  }
  if (opened > 0) {
    throw std::runtime_error("the generated table that begins at line " + std::to_string(opened) +
                             " has no end marker (" + kEnd + ")");
  }
  for (const auto& [name, text] : blocks) {
    if (unused.count(name)) updated << "\n" << text;
  }
  out << updated.str();
}

}  // namespace fabtwin
