// `fabtwin import perftest|nccl-tests LOG`: a measured run's log read into a measurement file in
// the simulator's HDF5 schema (docs/measurements.md): nccl-tests rows where a simulated run puts
// its collectives, perftest tables in /perftest, and what only hardware has in /hw.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/import/nccl_tests_log.h"
#include "hw/import/perftest_log.h"
#include "models/collectives/collective_result.h"
#include "sim/cli/collective_rows.h"

namespace fabtwin {

// /hw/properties: one scalar a measurement has and a simulation does not.
struct HwProperty {
  std::string name, value;
};

constexpr auto record_fields(std::type_identity<HwProperty>) {
  return std::tuple{
      text(
          "name", &HwProperty::name, 32,
          "What it is, e.g. `nccl_version`, `network`, `nccl_tests_version`, `avg_bus_bandwidth`."),
      text("value", &HwProperty::value, 128, "Its value as the log printed it."),
  };
}

// /hw/perftest_settings: every "name : value" of a perftest banner.
struct PerftestSetting {
  uint32_t run = 0;
  std::string name, value;
};

constexpr auto record_fields(std::type_identity<PerftestSetting>) {
  return std::tuple{
      field("run", &PerftestSetting::run, "", "Row of `/hw/perftest_runs`."),
      text("name", &PerftestSetting::name, 32, "The setting's name as printed, e.g. `TX depth`."),
      text("value", &PerftestSetting::value, 32, "Its value as printed, e.g. `128` or `4096[B]`."),
  };
}

// Everything a measurement file holds, table by table.
struct MeasurementFile {
  std::string importer;  // perftest, nccl-tests
  std::string log_file;
  int64_t log_lines = 0;
  std::vector<HwProperty> properties;
  std::vector<CollectiveRow> collectives;
  std::vector<RankGpuRow> rank_gpus;
  std::vector<GpuRow> gpus;
  std::vector<hw::NcclTestsExtraRow> nccl_tests;
  std::vector<hw::NcclTestsDevice> devices;
  std::vector<hw::NcclInfoLine> nccl_info;
  std::vector<hw::PerftestRun> perftest_runs;
  std::vector<PerftestSetting> perftest_settings;
  std::vector<hw::PerftestBandwidthRow> perftest_bandwidth;
  std::vector<hw::PerftestLatencyRow> perftest_latency;
};

// The file's tables that a simulated run does not write, in file order: visit(name, rows).
// (/collectives/... of an nccl-tests import are a run's tables, written as a run writes them.)
template <class Visit>
void for_each_measurement_table(const MeasurementFile& m, Visit&& visit) {
  visit("perftest/bandwidth", m.perftest_bandwidth);
  visit("perftest/latency", m.perftest_latency);
  visit("hw/properties", m.properties);
  visit("hw/perftest_runs", m.perftest_runs);
  visit("hw/perftest_settings", m.perftest_settings);
  visit("hw/nccl_tests", m.nccl_tests);
  visit("hw/devices", m.devices);
  visit("hw/nccl_info", m.nccl_info);
}

// The measurement file of a perftest log / an nccl-tests log (`op`: the collective when the log
// does not name it; a name the log contradicts is refused).
MeasurementFile perftest_measurement(const hw::PerftestLog& log, const std::string& file,
                                     int64_t lines);
MeasurementFile nccl_tests_measurement(const hw::NcclTestsLog& log, const std::string& file,
                                       int64_t lines, const std::string& op);

void write_measurement_hdf5(const MeasurementFile& m, const std::filesystem::path& file);
nlohmann::json measurement_json(const MeasurementFile& m);

int command_import(const std::vector<std::string>& args);

}  // namespace fabtwin
