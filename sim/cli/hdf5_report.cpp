// The HDF5 result file; layout documented in docs/hdf5-schema.md (schema version 4). Every
// table is a list of records written by its field table (sim/cli/record_columns.h).
#include <cstring>
#include <map>
#include <sstream>

#include "sim/atomic_file.h"
#include "sim/cli/record_columns.h"
#include "sim/cli/report.h"
#include "sim/hdf5_file.h"

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

// /collectives/rank_gpus: which GPU each rank of each result ran on.
struct RankGpuRow {
  uint32_t result_index = 0;
  uint32_t rank = 0;
  uint32_t gpu_index = 0;
};

constexpr auto record_fields(std::type_identity<RankGpuRow>) {
  return std::tuple{
      field("result_index", &RankGpuRow::result_index, "", "Row of `/collectives/results`."),
      field("rank", &RankGpuRow::rank, "", "Rank in that collective's communicator."),
      field("gpu_index", &RankGpuRow::gpu_index, "", "Row of `/collectives/gpus`."),
  };
}

struct GpuRow {
  std::string name;
};

constexpr auto record_fields(std::type_identity<GpuRow>) {
  return std::tuple{
      text("name", &GpuRow::name, 32, "The GPU's name, its node and local index: `node3/gpu5`."),
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

size_t cell_size(CellType type, int text_length) {
  switch (type) {
    case CellType::UInt8:
      return 1;
    case CellType::UInt16:
      return 2;
    case CellType::Int32:
    case CellType::UInt32:
      return 4;
    case CellType::Int64:
    case CellType::UInt64:
    case CellType::Float64:
      return 8;
    case CellType::Text:
      return static_cast<size_t>(text_length);
  }
  return 0;
}

hid_t hdf5_type(Hdf5File& h5, CellType type, int text_length) {
  switch (type) {
    case CellType::Int32:
      return H5T_NATIVE_INT32;
    case CellType::Int64:
      return H5T_NATIVE_INT64;
    case CellType::UInt8:
      return H5T_NATIVE_UINT8;
    case CellType::UInt16:
      return H5T_NATIVE_UINT16;
    case CellType::UInt32:
      return H5T_NATIVE_UINT32;
    case CellType::UInt64:
      return H5T_NATIVE_UINT64;
    case CellType::Float64:
      return H5T_NATIVE_DOUBLE;
    case CellType::Text:
      return h5.fixed_string(static_cast<size_t>(text_length));
  }
  return -1;
}

template <class T>
void put(char* at, T value) {
  std::memcpy(at, &value, sizeof value);
}

void write_cell(char* at, CellType type, int text_length, const Cell& c) {
  const auto integer = [&] {
    return std::holds_alternative<int64_t>(c)    ? std::get<int64_t>(c)
           : std::holds_alternative<uint64_t>(c) ? static_cast<int64_t>(std::get<uint64_t>(c))
                                                 : int64_t{std::get<bool>(c)};
  };
  switch (type) {
    case CellType::Int32:
      return put(at, static_cast<int32_t>(integer()));
    case CellType::Int64:
      return put(at, integer());
    case CellType::UInt8:
      return put(at, static_cast<uint8_t>(integer()));
    case CellType::UInt16:
      return put(at, static_cast<uint16_t>(integer()));
    case CellType::UInt32:
      return put(at, static_cast<uint32_t>(integer()));
    case CellType::UInt64:
      return put(at, static_cast<uint64_t>(integer()));
    case CellType::Float64:
      return put(at, std::get<double>(c));
    case CellType::Text: {
      const std::string& s = std::get<std::string>(c);
      std::memcpy(at, s.data(), std::min(s.size(), static_cast<size_t>(text_length)));
      return;
    }
  }
}

// Writes `rows` as a compound dataset laid out like a C struct of its columns.
template <class R>
void write_table(Hdf5File& h5, const std::string& name, const std::vector<R>& rows) {
  const std::vector<Column<R>> columns = columns_of<R>();
  std::vector<Hdf5Field> fields;
  std::vector<size_t> offsets;
  size_t size = 0, align = 1;
  for (const Column<R>& c : columns) {
    const size_t n = cell_size(c.type, c.text_length), a = c.type == CellType::Text ? 1 : n;
    size = (size + a - 1) / a * a;
    offsets.push_back(size);
    fields.push_back({c.name.c_str(), size, hdf5_type(h5, c.type, c.text_length)});
    size += n;
    align = std::max(align, a);
  }
  size = (size + align - 1) / align * align;
  std::vector<char> data(rows.size() * size, 0);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t k = 0; k < columns.size(); ++k) {
      const Column<R>& c = columns[k];
      write_cell(data.data() + i * size + offsets[k], c.type, c.text_length, c.get(rows[i]));
    }
  }
  h5.table(name, data.data(), rows.size(), size, fields);
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
  return blocks;
}

}  // namespace

void write_hdf5(const RunResult& r, const std::filesystem::path& file) {
  write_atomically(file, [&](const std::filesystem::path& temp) { write_contents(r, temp); });
}

void print_hdf5_schema(std::ostream& out, const std::string& doc) {
  const auto blocks = schema_blocks();
  if (doc.empty()) {
    for (const auto& [name, text] : blocks) out << text;
    return;
  }
  // The doc with each generated block replaced by the current one of its dataset; blocks the
  // doc lacks come at the end.
  std::map<std::string, std::string> unused(blocks.begin(), blocks.end());
  std::istringstream in(doc);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line.rfind(kBegin, 0) == 0) {
      inside = true;
      const std::string name =
          line.substr(std::strlen(kBegin), line.find(" -->") - std::strlen(kBegin));
      if (const auto it = unused.find(name); it != unused.end()) {
        out << it->second;
        unused.erase(it);
      }
    } else if (inside) {
      inside = line != kEnd;
    } else {
      out << line << "\n";
    }
  }
  for (const auto& [name, text] : blocks) {
    if (unused.count(name)) out << "\n" << text;
  }
}

}  // namespace fabtwin
