// `fabtwin fluid`: the DCQCN fluid model (CoNEXT 2016) integrated over time for a scenario's
// bottleneck, its summary, JSON report and HDF5 file (docs/fluid-model.md).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/fabric/fluid_bottleneck.h"
#include "models/fabric/run_result.h"
#include "sim/record_field.h"

namespace fabtwin {

// /fluid_queue: one row per sample of the bottleneck queue.
struct FluidQueueRecord {
  Time time;
  double queue_bytes = 0;
  double marking_probability = 0;
  double arrival_bps = 0;
};

constexpr auto record_fields(std::type_identity<FluidQueueRecord>) {
  return std::tuple{
      field("time_ps", &FluidQueueRecord::time, "ps", "Model time of the sample."),
      field("queue_bytes", &FluidQueueRecord::queue_bytes, "B",
            "Bottleneck queue q of the fluid model, in data-frame bytes (fractional)."),
      field("marking_probability", &FluidQueueRecord::marking_probability, "",
            "RED marking probability p(q) per packet: 0 up to Kmin, linear to Pmax at Kmax, 1 "
            "above."),
      field("arrival_bps", &FluidQueueRecord::arrival_bps, "b/s",
            "Sum of the flows' current rates R_C into the queue."),
  };
}

// One invocation of the fluid model and what it gave.
struct FluidResult {
  std::string scenario_text, scenario_file;
  FluidBottleneck bottleneck;
  FluidSetup setup;
  DcqcnTrajectory trajectory;
  DcqcnTrajectorySummary summary;
  std::optional<DcqcnFixedPoint> fixed_point;  // none when p* would exceed Pmax
  std::string fixed_point_error;
  double wall_seconds = 0;
  std::string run_id;

  std::vector<FluidQueueRecord> queue_rows() const;
  // Like a run's /qp_rates: a row per (sample, flow) while the flow sends, by flow within a time.
  std::vector<RateSampleRecord> rate_rows() const;
};

// Integrates the scenario's bottleneck (throws ScenarioError / std::invalid_argument).
FluidResult run_fluid(const FabricSpec& spec, const FluidOptions& options);

void print_fluid_summary(const FluidResult& r, std::ostream& out);
nlohmann::json fluid_json_report(const FluidResult& r);
void write_fluid_hdf5(const FluidResult& r, const std::filesystem::path& file);  // hdf5_report.cpp

// `fabtwin fluid SCENARIO [--set K=V]... [--out F.h5] [--json F] [--duration T] [--delay T]
// [--step T] [--sample T] [--after T]`.
int command_fluid(const std::vector<std::string>& args);

}  // namespace fabtwin
