// The runs of a sweep: every point and seed resolved and checked before anything runs (bad
// values and shadowed axes refused with the point and the path named), then run concurrently
// (`jobs` at a time, each on its own engine threads) and stored as each finishes.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/scenario_file.h"
#include "sim/sweep/sweep_file.h"
#include "sim/sweep/sweep_store.h"

namespace fabtwin::sweep {

// One run: a point with one seed.
struct Task {
  size_t point = 0;
  size_t seed_index = 0;
  uint64_t seed = 0;
  std::string key;      // text_hash of the resolved scenario text (the document with overrides)
  nlohmann::json root;  // the point's scenario with run.seed set
};

struct PreparedSweep {
  SweepFile file;
  ScenarioDocument base;  // the base scenario with the file's and the command's `set`
  std::vector<Point> points;
  std::vector<Task> tasks;            // point by point, seed by seed
  std::vector<std::string> metrics;   // checked against the catalogue
  std::vector<std::string> warnings;  // axes shadowed at some points; the scenarios' warnings
};

// Checks a metric name ("NAME" or "NAME.GROUP") against the catalogue; throws SweepError naming
// `where`.
void check_metric_name(const std::string& name, const std::string& where);

// Loads the base scenario, expands the points, applies every point and seed and resolves it
// (FabricSpec::resolve), and checks each axis for shadowing: an axis none of whose value
// changes make any difference to the resolved scenario (FabricSpec compared member by member,
// its text aside) is refused. Resolves on `jobs` threads; the error reported is the first point's
// whatever the job count. Throws SweepError.
PreparedSweep prepare_sweep(SweepFile file, const std::vector<std::string>& extra_sets,
                            int jobs = 1);

// The document a task runs (the base scenario's folder for relative paths).
ScenarioDocument task_document(const PreparedSweep& s, const Task& t);

// Runs one task on `threads` engine threads and returns its record (key, point, seed, axis
// values, fingerprint, the catalogue's metrics, the scenario as run); with `result_file`, also
// writes the run's HDF5 file there first.
nlohmann::json run_task(const PreparedSweep& s, const Task& t, int threads,
                        const std::string& result_file);

// Runs `tasks` (indices into s.tasks), `jobs` at a time, each stored in `store` as it finishes;
// `done(task, record, seconds)` is called after each store (serialised), with the wall time of
// the whole task (resolve, build, run, metrics, store). The first error stops new tasks; it is
// thrown once the running ones end.
void run_tasks(const PreparedSweep& s, const std::vector<size_t>& tasks, int jobs, int threads,
               const SweepStore& store, bool point_results,
               const std::function<void(size_t, const nlohmann::json&, double)>& done);

// Engine threads per point: `threads` if given (> 0), else the hardware threads shared among
// `jobs` concurrent points and `local_ranks` processes, at least 1.
int threads_per_point(int threads, int jobs, int local_ranks);

}  // namespace fabtwin::sweep
