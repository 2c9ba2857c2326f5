// One process of a `fabtwin-hw run`: the scenario resolved, the mapping and the plan made (the
// same on every process), then, inside a control group, the plan hashes compared, the data
// transport connected, an untimed warm-up, a barrier and the common start, the timed run, and
// every rank's timings gathered to rank 0, which writes the measurement file.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "hw/control/control_group.h"
#include "hw/run/data_transport.h"
#include "hw/run/host_mapping.h"
#include "hw/run/hw_config.h"
#include "hw/run/plan.h"
#include "models/fabric/fabric_spec.h"

namespace fabtwin::hw {

struct VerbsSettings;  // hw/verbs/verbs_transport.h

struct RunOptions {
  std::string scenario;
  std::vector<std::string> sets;  // --set path=value
  int rank = -1;                  // --rank; -1: from the launcher, or 0 for one process
  std::string out;                // --out FILE.h5
  std::string json;               // --json FILE or -
};

struct PreparedRun {
  FabricSpec spec;
  HwConfig config;
  HostMapping mapping;
  Plan plan;
  int rank = 0;
  std::string data_address;  // tcp: where this rank's data listener binds
};

// Resolves the scenario and its `hw` section, the mapping and this process's rank, and makes
// the plan. Throws ScenarioError, MappingError, or std::invalid_argument for a rank that does
// not fit the mapping.
PreparedRun prepare_run(const RunOptions& options);

// The settings every process must share, as they enter the plan's hash.
std::vector<std::pair<std::string, std::string>> shared_settings(const HwConfig& config);

// The control group's configuration for this process (token left to the caller).
ControlConfig control_config(const PreparedRun& run);

// The data transport hw.transport names; throws std::runtime_error saying what is missing
// (a transport not built into this binary, no RDMA device).
std::unique_ptr<DataTransport> make_transport(const PreparedRun& run);

// The run itself inside `control` (collective: every rank calls it). Rank 0 writes
// options.out / options.json and prints a summary to `say`. Returns the exit status: 0 when
// every flow completed, 1 when some did not before hw.run_deadline (the file says which).
int execute_run(const PreparedRun& run, ControlGroup& control, DataTransport& transport,
                const RunOptions& options, std::ostream& say);

// The verbs transport's settings from the `hw` section (defined when the verbs transport is
// built): device, port, GID index, traffic class, SL, tx depth, inline size, memory and GPU,
// and the plan's verb (WRITE or SEND: the transport runs one verb; a plan with both is refused
// with std::runtime_error).
VerbsSettings verbs_settings(const HwConfig& config, const Plan& plan);

// What `fabtwin-hw check` says of hw.transport on this host: for verbs, the RDMA device opened
// (and closed); throws std::runtime_error saying what is missing.
std::string check_transport(const PreparedRun& run);

// `fabtwin-hw check`: the mapping and the plan, printed.
void print_check(const PreparedRun& run, std::ostream& out);

}  // namespace fabtwin::hw
