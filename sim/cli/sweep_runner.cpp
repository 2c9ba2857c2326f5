#include "sim/cli/sweep_runner.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <set>
#include <thread>

#include "models/fabric/fabric.h"
#include "models/fabric/metrics.h"
#include "sim/atomic_file.h"
#include "sim/cli/report.h"

namespace fabtwin::sweep {

namespace {

std::string point_name(const PreparedSweep& s, size_t point) {
  return "point " + std::to_string(point) + " (" + describe_point(s.file, s.points[point].values) +
         ")";
}

FabricSpec resolve_or_explain(const ScenarioDocument& doc, const std::string& what) {
  try {
    return FabricSpec::resolve(doc);
  } catch (const ScenarioError& e) {
    throw SweepError(what + ": " + e.what());
  }
}

// Test hook: FABTWIN_SWEEP_LOG names a file that gets "start KEY" and "stored KEY" lines
// (appended whole with O_APPEND), for the test that kills sweeps at random moments.
void log_event(const char* what, const std::string& key) {
  static const char* file = std::getenv("FABTWIN_SWEEP_LOG");
  if (file == nullptr || *file == '\0') return;
  const std::string line = std::string(what) + " " + key + "\n";
  const int fd = ::open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

// An axis is shadowed when no change of its value (others held) changes the resolved scenario.
// Tried at up to four points spread over the design, with up to three other values each: a
// difference (or a value the scenario refuses) shows the axis used at that point. Shadowed at
// every point tried: refused. At some only: a warning (those points repeat one another).
void check_shadowing(PreparedSweep& s) {
  const std::vector<Axis>& axes = s.file.axes;
  const size_t n = s.points.size();
  std::vector<size_t> bases;
  for (size_t k = 0; k < std::min<size_t>(4, n); ++k)
    bases.push_back(k * n / std::min<size_t>(4, n));
  for (size_t a = 0; a < axes.size(); ++a) {
    std::vector<nlohmann::json> values;
    for (const Point& p : s.points) {
      if (std::find(values.begin(), values.end(), p.values[a]) == values.end())
        values.push_back(p.values[a]);
    }
    if (values.size() < 2) continue;
    size_t used = 0;
    std::string same;  // the first point and pair found equal, for the message
    size_t same_point = 0;
    for (const size_t b : bases) {
      const Point& p = s.points[b];
      const ScenarioDocument doc = task_document(s, s.tasks[p.index * s.file.seeds.size()]);
      const FabricSpec here = FabricSpec::resolve(doc);
      bool matters = false;
      std::string pair;
      int tried = 0;
      for (size_t v = 0; v < values.size() && tried < 3 && !matters; ++v) {
        if (values[v] == p.values[a]) continue;
        ++tried;
        ScenarioDocument other = doc;
        apply_override(other.root, axes[a].path + "=" + values[v].dump());
        try {
          if (same_resolution(here, FabricSpec::resolve(other))) {
            if (pair.empty()) pair = p.values[a].dump() + " and " + values[v].dump();
          } else {
            matters = true;
          }
        } catch (const ScenarioError&) {
          matters = true;  // the value is read: the scenario refuses it
        }
      }
      if (matters) {
        ++used;
      } else if (same.empty()) {
        same = pair;
        same_point = p.index;
      }
    }
    const std::string what = point_name(s, same_point) + ": axis " + axes[a].path +
                             " is shadowed: its values " + same +
                             " give the same resolved scenario";
    if (used == 0) {
      throw SweepError(what + " (every value tried at " + std::to_string(bases.size()) +
                       " points): another setting overrides it (sweep the one that is used, or "
                       "remove the one that overrides it), or its values mean the same");
    }
    if (!same.empty()) {
      s.warnings.push_back(what + " there (it is used at " + std::to_string(used) + " of the " +
                           std::to_string(bases.size()) +
                           " points tried): points that differ only in it repeat one another");
    }
  }
}

// Calls f(i) for every i below n on `jobs` threads. The error of the smallest i is thrown, so
// which error is reported does not depend on the job count.
void for_each_index(size_t n, int jobs, const std::function<void(size_t)>& f) {
  std::atomic<size_t> next{0};
  std::mutex mutex;
  size_t first = n;
  std::exception_ptr error;
  auto work = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= n) return;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (i > first) return;
      }
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (i < first) {
          first = i;
          error = std::current_exception();
        }
      }
    }
  };
  std::vector<std::thread> workers;
  for (int k = 1; k < std::min<int>(jobs, static_cast<int>(n)); ++k) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

void check_metric_name(const std::string& name, const std::string& where) {
  for (const Metric& m : metric_catalogue()) {
    if (m.name == name) {
      if (m.groups) {
        throw SweepError("sweep file error at " + where + ": \"" + name +
                         "\" is one figure per group: name one as " + name + ".GROUP");
      }
      if (!m.args.empty()) {
        throw SweepError("sweep file error at " + where + ": \"" + name + "\" needs arguments (" +
                         m.args + "); sweeps take metrics without arguments");
      }
      return;
    }
  }
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    const std::string base = name.substr(0, dot);
    for (const Metric& m : metric_catalogue()) {
      if (m.name == base && m.groups && dot + 1 < name.size()) return;
    }
  }
  std::string known;
  for (const Metric& m : metric_catalogue()) {
    if (!m.args.empty()) continue;
    known += (known.empty() ? "" : ", ") + m.name + (m.groups ? ".GROUP" : "");
  }
  throw SweepError("sweep file error at " + where + ": expected one of " + known + ", found \"" +
                   name + "\"");
}

ScenarioDocument task_document(const PreparedSweep& s, const Task& t) {
  ScenarioDocument doc;
  doc.root = t.root;
  doc.file = s.base.file;
  doc.dir = s.base.dir;
  return doc;
}

PreparedSweep prepare_sweep(SweepFile file, const std::vector<std::string>& extra_sets, int jobs) {
  PreparedSweep s;
  std::vector<std::string> sets = file.set;
  sets.insert(sets.end(), extra_sets.begin(), extra_sets.end());
  try {
    s.base = load_scenario(file.scenario, sets);
  } catch (const ScenarioError& e) {
    throw SweepError("base scenario " + file.scenario.string() + " (with set): " + e.what());
  }
  s.points = expand(file, s.base.root);
  s.file = std::move(file);
  for (size_t i = 0; i < s.file.metrics.size(); ++i) {
    check_metric_name(s.file.metrics[i], "metrics[" + std::to_string(i) + "]");
  }
  s.metrics = s.file.metrics;
  if (s.metrics.empty()) {
    for (const Metric& m : metric_catalogue()) {
      if (m.value && m.args.empty()) s.metrics.push_back(m.name);
    }
  }
  for (size_t i = 0; i < s.file.objectives.size(); ++i) {
    const std::string& m = s.file.objectives[i].metric;
    check_metric_name(m, "objectives[" + std::to_string(i) + "]");
    if (std::find(s.metrics.begin(), s.metrics.end(), m) == s.metrics.end()) s.metrics.push_back(m);
  }
  for (const Point& p : s.points) {
    for (size_t k = 0; k < s.file.seeds.size(); ++k) {
      Task t;
      t.point = p.index;
      t.seed_index = k;
      t.seed = s.file.seeds[k];
      t.root = p.root;
      apply_override(t.root, "run.seed=" + std::to_string(t.seed));
      t.key = run_key(kVersion, t.root);
      s.tasks.push_back(std::move(t));
    }
  }
  // The scenarios' own warnings (costly settings), each said once.
  std::set<std::string> costly;
  std::mutex costly_lock;
  for_each_index(s.tasks.size(), jobs, [&](size_t i) {
    const Task& t = s.tasks[i];
    const FabricSpec spec = resolve_or_explain(
        task_document(s, t), point_name(s, t.point) + ", seed " + std::to_string(t.seed));
    const std::lock_guard lock(costly_lock);
    costly.insert(spec.warnings.begin(), spec.warnings.end());
  });
  s.warnings.insert(s.warnings.end(), costly.begin(), costly.end());
  check_shadowing(s);
  return s;
}

nlohmann::json run_task(const PreparedSweep& s, const Task& t, int threads,
                        const std::string& result_file) {
  log_event("start", t.key);
  Fabric fabric(FabricSpec::resolve(task_document(s, t)), threads);
  RunResult r = fabric.run();
  r.run_id = new_run_id();
  if (!result_file.empty()) {
    // The HDF5 library (a serial build) is not thread-safe: one result file at a time.
    static std::mutex hdf5;
    std::lock_guard<std::mutex> lock(hdf5);
    write_hdf5(r, result_file);
  }
  nlohmann::json record;
  record["key"] = t.key;
  record["fabtwin_version"] = kVersion;
  record["point"] = t.point;
  record["seed"] = t.seed;
  nlohmann::json axes = nlohmann::json::object();
  for (size_t a = 0; a < s.file.axes.size(); ++a) {
    axes[s.file.axes[a].path] = s.points[t.point].values[a];
  }
  record["axes"] = axes;
  record["fingerprint"] = hex64(r.fingerprint);
  record["events"] = r.events;
  record["reached_end"] = r.reached_end;
  record["stop_reason"] = r.stop_reason;
  record["wall_seconds"] = r.wall_seconds;
  record["run_id"] = r.run_id;
  record["metrics"] = metrics_json(r);
  record["scenario"] = t.root;
  return record;
}

void run_tasks(const PreparedSweep& s, const std::vector<size_t>& tasks, int jobs, int threads,
               const SweepStore& store, bool point_results,
               const std::function<void(size_t, const nlohmann::json&, double)>& done) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::exception_ptr error;
  auto work = [&] {
    for (;;) {
      if (stop) return;
      const size_t i = next.fetch_add(1);
      if (i >= tasks.size()) return;
      const Task& t = s.tasks[tasks[i]];
      try {
        const auto start = std::chrono::steady_clock::now();
        const nlohmann::json record =
            run_task(s, t, threads, point_results ? store.result_path(t.key).string() : "");
        store.store(t.key, record);
        log_event("stored", t.key);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::lock_guard<std::mutex> lock(mutex);
        done(tasks[i], record, seconds);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error) error = std::current_exception();
        stop = true;
        return;
      }
    }
  };
  const int n = std::max(1, std::min<int>(jobs, static_cast<int>(tasks.size())));
  std::vector<std::thread> workers;
  for (int k = 1; k < n; ++k) workers.emplace_back(work);
  work();
  for (std::thread& w : workers) w.join();
  if (error) std::rethrow_exception(error);
}

int threads_per_point(int threads, int jobs, int local_ranks) {
  if (threads > 0) return threads;
  const int hardware = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, hardware / std::max(1, jobs * std::max(1, local_ranks)));
}

}  // namespace fabtwin::sweep
