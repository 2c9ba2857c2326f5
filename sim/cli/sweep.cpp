#include "sim/cli/sweep.h"

#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <set>

#include "models/fabric/metrics.h"
#include "sim/atomic_file.h"
#include "sim/cli/report.h"
#include "sim/cli/sweep_runner.h"
#include "sim/sweep/sweep_store.h"
#include "sim/sweep/sweep_table.h"
#include "sim/utf8_text.h"

namespace po = boost::program_options;

namespace fabtwin {

using namespace sweep;

namespace {

std::filesystem::path default_out(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  if (name.size() > 5 && name.ends_with(".json")) name.resize(name.size() - 5);
  if (!name.ends_with(".sweep")) name += ".sweep";
  return file.parent_path() / name;
}

std::string figure(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

std::string short_figure(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

std::string mean_text(const MeanCi& m) {
  return figure(m.mean) + (std::isfinite(m.ci95) ? " ± " + figure(m.ci95) : "");
}

// Seconds as "42 s", "3.5 min" or "2.1 h".
std::string duration(double s) {
  if (s < 120) return figure(std::round(s)) + " s";
  if (s < 7200) return figure(std::round(s / 6) / 10) + " min";
  return figure(std::round(s / 360) / 10) + " h";
}

// Local ranks on this machine (OpenMPI, MPICH/Hydra), so that the engine threads of all the
// ranks' points fit it.
int local_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    if (const char* v = std::getenv(name)) return std::max(1, std::atoi(v));
  }
  return 1;
}

}  // namespace

int command_sweep(const std::vector<std::string>& args, Transport* transport) {
  po::options_description opts("fabtwin sweep SWEEP.json");
  std::vector<std::string> sets, objectives_given;
  std::string out, resume;
  int jobs = 1, threads = 0;
  opts.add_options()("help,h", "this help")("jobs,j", po::value(&jobs),
                                            "points run at the same time (default 1)")(
      "threads", po::value(&threads),
      "engine threads per point (default: the hardware threads shared among the jobs)")(
      "out", po::value(&out),
      "output folder (default: the sweep file's name without .json, e.g. x.sweep/)")(
      "objective", po::value(&objectives_given)->composing(),
      "\"min METRIC\" or \"max METRIC\" (once or twice; replaces the file's objectives)")(
      "resume", po::value(&resume),
      "keep: the sweep file changed since --out was started; reuse the stored points whose "
      "resolved scenario is unchanged")("restart", "discard every stored point first")(
      "point-results", "also write each run's HDF5 result file, points/<key>.h5")(
      "set", po::value(&sets)->composing(),
      "override a value of the base scenario: path=value (repeatable)")(
      "dry-run", "resolve and check every point, list them, run nothing")(
      "list-metrics", "list the metrics a sweep can name, and exit")(
      "sweep", po::value<std::string>(), "sweep file");
  po::positional_options_description pos;
  pos.add("sweep", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  const bool root = transport == nullptr || transport->rank() == 0;
  if (vm.count("list-metrics")) {
    for (const Metric& m : metric_catalogue()) {
      if (!m.args.empty()) continue;
      std::cout << m.name << (m.groups ? ".GROUP" : "") << "  [" << m.unit << "]  " << m.meaning
                << "\n";
    }
    return 0;
  }
  if (vm.count("help") || !vm.count("sweep")) {
    std::cout << opts;
    return vm.count("help") ? 0 : 2;
  }
  if (jobs < 1) throw po::error("--jobs must be 1 or more");
  if (threads < 0) throw po::error("--threads must be 0 or more");
  if (!resume.empty() && resume != "keep") throw po::error("--resume takes keep");
  if (!resume.empty() && vm.count("restart"))
    throw po::error("--resume and --restart exclude each other");
  const ResumeMode mode = vm.count("restart") ? ResumeMode::Restart
                          : resume == "keep"  ? ResumeMode::Keep
                                              : ResumeMode::Refuse;
  const std::filesystem::path file = vm["sweep"].as<std::string>();
  SweepFile parsed = read_sweep_file(file);
  if (!objectives_given.empty()) {
    if (objectives_given.size() > 2) throw po::error("--objective: at most two");
    parsed.objectives.clear();
    for (const std::string& o : objectives_given)
      parsed.objectives.push_back(parse_objective(o, "--objective"));
  }
  // The manifest's key: the sweep file's bytes and the command's own overrides.
  std::string identity = parsed.text;
  for (const std::string& s : sets) identity += "\n--set " + s;
  const std::string sweep_hash = text_hash(identity);

  const auto started = std::chrono::steady_clock::now();
  const PreparedSweep s = prepare_sweep(std::move(parsed), sets, jobs);
  const double check_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const size_t n_seeds = s.file.seeds.size();
  if (root) {
    for (const std::string& w : s.warnings) std::cerr << "fabtwin sweep: warning: " << w << "\n";
  }
  if (vm.count("dry-run")) {
    if (!root) return 0;
    for (const Point& p : s.points) {
      std::cout << "point " << p.index << "  " << describe_point(s.file, p.values) << "\n";
    }
    std::cout << s.points.size() << " points x " << n_seeds << " seeds = " << s.tasks.size()
              << " runs, every one resolved and checked\n";
    return 0;
  }

  const std::filesystem::path dir = out.empty() ? default_out(file) : std::filesystem::path(out);
  SweepStore store(dir);
  // Rank 0 checks the folder and the manifest before any rank runs; the others wait for it.
  std::string open_error;
  if (root) {
    check_writable(dir / "table.csv", "--out");
    check_writable(dir / "table.h5", "--out", OutputKind::Seekable);
    try {
      if (store.open(sweep_hash, std::filesystem::absolute(file).string(), mode) &&
          mode == ResumeMode::Keep) {
        std::cerr << "fabtwin sweep: the sweep file changed since " << dir.string()
                  << " was started; reusing the stored points whose scenario is unchanged\n";
      }
    } catch (const SweepError& e) {
      open_error = e.what();
    }
  }
  if (transport != nullptr && transport->ranks() > 1 &&
      transport->sum(int64_t{open_error.empty() ? 0 : 1}) != 0 && !root) {
    throw SweepError("");  // rank 0 says why
  }
  if (!open_error.empty()) throw SweepError(open_error);
  // Ranks on other machines than rank 0's may not share its folder: each stores into its own.
  if (!root) std::filesystem::create_directories(dir / "points");

  // What earlier runs stored, and this rank's share of the rest (the i-th distinct run goes to
  // rank i mod N).
  std::map<std::string, nlohmann::json> records;
  const int rank = transport ? transport->rank() : 0, ranks = transport ? transport->ranks() : 1;
  const bool point_results = vm.count("point-results") > 0;
  // Two points with the same scenario run once: the runs are the distinct keys, in task order.
  std::vector<size_t> mine;
  // This rank's share found stored: sent to rank 0 too, whose folder may lack them (a sweep
  // killed after this rank stored them and before it sent them).
  std::vector<size_t> mine_stored;
  std::set<std::string> seen;
  size_t stored_before = 0, distinct = 0;
  for (size_t i = 0; i < s.tasks.size(); ++i) {
    const Task& t = s.tasks[i];
    if (!seen.insert(t.key).second) continue;
    const size_t index = distinct++;
    std::optional<nlohmann::json> r = store.load(t.key);
    if (r && point_results && !std::filesystem::exists(store.result_path(t.key))) r.reset();
    const bool my_share = static_cast<int>(index % static_cast<size_t>(ranks)) == rank;
    if (r) {
      records[t.key] = std::move(*r);
      ++stored_before;
      if (my_share) mine_stored.push_back(i);
    } else if (my_share) {
      mine.push_back(i);
    }
  }
  const int per_point = threads_per_point(threads, jobs, local_ranks());

  // Progress on a terminal: runs done of this rank's share, the running best, the ETA.
  const bool progress = root && ::isatty(STDERR_FILENO);
  const auto run_started = std::chrono::steady_clock::now();
  auto last_progress = run_started - std::chrono::seconds(1);
  size_t done_now = 0;
  const Objective* goal = s.file.objectives.empty() ? nullptr : &s.file.objectives.front();
  std::string best_text;
  double best = std::nan("");
  // The sweep's own time per run: the task's wall time less its simulation's.
  double task_seconds = 0, simulation_seconds = 0;
  auto on_done = [&](size_t task, const nlohmann::json& record, double seconds) {
    records[s.tasks[task].key] = record;
    ++done_now;
    task_seconds += seconds;
    simulation_seconds += record.value("wall_seconds", 0.0);
    if (goal != nullptr) {
      // The point's mean once all its seeds are in.
      const size_t p = s.tasks[task].point;
      std::vector<double> x;
      bool complete = true;
      for (size_t k = 0; k < n_seeds; ++k) {
        const auto it = records.find(s.tasks[p * n_seeds + k].key);
        if (it == records.end()) {
          complete = false;
          break;
        }
        if (const auto v = metric_value(it->second["metrics"], goal->metric)) x.push_back(*v);
      }
      const double mean = mean_ci95(x).mean;
      if (complete && std::isfinite(mean) &&
          (!std::isfinite(best) || (goal->maximize ? mean > best : mean < best))) {
        best = mean;
        best_text = "best " + goal->metric + " " + figure(mean) + " at point " + std::to_string(p);
      }
    }
    if (!progress) return;
    // At most twice a second, like `fabtwin run`'s line.
    const auto now = std::chrono::steady_clock::now();
    if (now - last_progress < std::chrono::milliseconds(500) && done_now < mine.size()) return;
    last_progress = now;
    const double wall = std::chrono::duration<double>(now - run_started).count();
    const double eta =
        wall / static_cast<double>(done_now) * static_cast<double>(mine.size() - done_now);
    std::fprintf(stderr, "\r  sweep %zu/%zu runs%s  %s  ETA %s   ",
                 stored_before + done_now * ranks, distinct, ranks > 1 ? " (est.)" : "",
                 best_text.c_str(), duration(eta).c_str());
  };
  run_tasks(s, mine, jobs, per_point, store, point_results, on_done);
  if (progress) std::fprintf(stderr, "\r%100s\r", "");

  // Rank 0 assembles: every rank's new records come to it (stored again where this machine
  // does not see them, as on ranks without a shared folder).
  if (transport != nullptr && transport->ranks() > 1) {
    nlohmann::json mine_json = nlohmann::json::array();
    for (const std::vector<size_t>* share : {&mine, &mine_stored}) {
      for (size_t i : *share) mine_json.push_back(records[s.tasks[i].key]);
    }
    const std::vector<std::string> all = transport->gather(json_document(mine_json, -1));
    if (!root) return 0;
    for (const std::string& text : all) {
      for (nlohmann::json& r : nlohmann::json::parse(text)) {
        const std::string key = r["key"];
        if (!store.load(key)) store.store(key, r);
        records[key] = std::move(r);
      }
    }
  }
  if (!root) return 0;

  const Table table = make_table(s.file, s.points, s.metrics, [&](size_t point, size_t seed) {
    const auto it = records.find(s.tasks[point * n_seeds + seed].key);
    return it == records.end() ? nullptr : &it->second;
  });
  // A metric no run measured (a group no run has, such as a misspelt generator): say so.
  for (size_t m = 0; m < table.metrics.size(); ++m) {
    if (std::any_of(table.rows.begin(), table.rows.end(),
                    [&](const TableRow& r) { return std::isfinite(r.metrics[m].mean); }))
      continue;
    std::cerr << "fabtwin sweep: warning: metrics: no run measured \"" << table.metrics[m]
              << "\"; its columns are empty";
    const std::string& name = table.metrics[m];
    const size_t dot = name.find('.');
    if (dot != std::string::npos && !records.empty()) {
      std::string groups;
      const nlohmann::json& first = records.begin()->second["metrics"];
      const auto it = first.find(name.substr(0, dot));
      if (it != first.end() && it->is_object()) {
        for (const auto& [group, value] : it->items())
          groups += (groups.empty() ? "" : ", ") + group;
      }
      std::cerr << " (groups a run has: " << (groups.empty() ? "none" : groups) << ")";
    }
    std::cerr << "\n";
  }
  write_text_atomically(dir / "table.csv", table_csv(table));
  write_table_h5(table, dir / "table.h5", std::filesystem::absolute(file).string(), kVersion);

  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::cout << "sweep       " << file.string() << ": " << s.points.size() << " points x " << n_seeds
            << " seeds = " << s.tasks.size() << " runs (" << stored_before << " stored before, "
            << distinct - stored_before
            << " run now: " << (ranks > 1 ? std::to_string(ranks) + " ranks x " : std::string())
            << jobs << (jobs > 1 ? " jobs x " : " job x ") << per_point
            << (per_point > 1 ? " threads" : " thread") << ") in " << duration(wall) << "\n";
  if (done_now > 0) {
    // What the sweep adds to each run of this process: its share of the checks made before
    // running, and each task's time outside the simulation (resolve, build, metrics, store).
    const double n = static_cast<double>(done_now);
    const double per_run = check_seconds / n + (task_seconds - simulation_seconds) / n;
    std::cout << "overhead    " << short_figure(1e3 * per_run) << " ms per run (checks "
              << short_figure(1e3 * check_seconds / n) << " ms, resolve+build+metrics+store "
              << short_figure(1e3 * (task_seconds - simulation_seconds) / n)
              << " ms) = " << short_figure(100 * per_run / (simulation_seconds / n))
              << "% of the mean simulation, " << short_figure(simulation_seconds / n) << " s\n";
  }
  std::cout << "table       " << (dir / "table.csv").string() << "\n";
  std::cout << "table       " << (dir / "table.h5").string() << "\n";
  auto row_text = [&](size_t row) {
    return "point " + std::to_string(table.rows[row].point) + " (" +
           describe_point(s.file, table.rows[row].values) + ")";
  };
  if (s.file.objectives.size() == 1) {
    const Objective& o = s.file.objectives[0];
    const size_t m = metric_column(table, o.metric);
    const std::vector<size_t> ranked = rank_rows(table, o);
    std::cout << (o.maximize ? "max " : "min ") << o.metric << ":\n";
    for (size_t k = 0; k < std::min<size_t>(5, ranked.size()); ++k) {
      std::cout << (k == 0 ? "  best      " : "            ")
                << mean_text(table.rows[ranked[k]].metrics[m]) << "  " << row_text(ranked[k])
                << "\n";
    }
    if (ranked.empty()) std::cout << "  no point could measure it\n";
  } else if (s.file.objectives.size() == 2) {
    const Objective &a = s.file.objectives[0], &b = s.file.objectives[1];
    const size_t ma = metric_column(table, a.metric), mb = metric_column(table, b.metric);
    const std::vector<size_t> front = pareto_front(table, a, b);
    std::cout << "pareto front (" << (a.maximize ? "max " : "min ") << a.metric << ", "
              << (b.maximize ? "max " : "min ") << b.metric << "): " << front.size() << " points\n";
    for (size_t row : front) {
      std::cout << "  " << mean_text(table.rows[row].metrics[ma]) << "  "
                << mean_text(table.rows[row].metrics[mb]) << "  " << row_text(row) << "\n";
    }
  }
  return 0;
}

}  // namespace fabtwin
