#include "sim/cli/calibrate.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "models/fabric/fabric_spec.h"
#include "sim/atomic_file.h"
#include "sim/cli/report.h"
#include "sim/cli/result_tables.h"
#include "sim/cli/sweep_runner.h"
#include "sim/sha256.h"
#include "sim/sweep/sweep_file.h"
#include "sim/sweep/sweep_store.h"
#include "sim/utf8_text.h"
#include "validate/calibration/alpha_beta.h"
#include "validate/calibration/calibration_report.h"
#include "validate/calibration/fitter.h"
#include "validate/calibration/observations.h"
#include "validate/calibration/parameter_space.h"
#include "validate/calibration/slice.h"

namespace po = boost::program_options;

namespace fabtwin {

using namespace calibration;

namespace {

// One measurement with the scenario that describes the measured run, and where its simulated
// points are kept (a sweep store: one record and one result file per point, so that an
// interrupted calibration resumes with the points it had).
struct CaseRun {
  Case info;
  ScenarioDocument doc;
  sweep::PreparedSweep prepared;
  std::unique_ptr<sweep::SweepStore> store;
};

// Simulates parameter points: each point in every case, through the sweep runner (`jobs` runs
// at a time), each result read back from its stored file. Values are kept by run key.
class Simulations {
 public:
  Simulations(std::vector<CaseRun>& cases, const std::vector<FitParameter>& parameters, int jobs,
              int threads)
      : cases_(cases), parameters_(parameters), jobs_(jobs), threads_(threads) {}

  // [point][case] -> the values of every keyed row of that run.
  std::vector<std::vector<const RowValues*>> run(const std::vector<std::vector<double>>& points) {
    std::vector<std::vector<const RowValues*>> out(points.size(),
                                                   std::vector<const RowValues*>(cases_.size()));
    for (size_t c = 0; c < cases_.size(); ++c) {
      CaseRun& cr = cases_[c];
      cr.prepared.tasks.clear();
      std::vector<size_t> pending;
      std::vector<std::string> keys;
      for (const std::vector<double>& values : points) {
        sweep::Task t;
        t.point = cr.prepared.tasks.size();
        t.root = cr.doc.root;
        for (size_t j = 0; j < parameters_.size(); ++j) {
          apply_override(
              t.root, parameters_[j].path + "=" + parameters_[j].scenario_value(values[j]).dump());
        }
        t.key = sweep::run_key(kVersion, t.root);
        keys.push_back(t.key);
        const bool known =
            values_.count(t.key) || (cr.store->load(t.key) && exists(cr.store->result_path(t.key)));
        const bool queued = std::any_of(pending.begin(), pending.end(), [&](size_t i) {
          return cr.prepared.tasks[i].key == t.key;
        });
        if (!known && !queued) pending.push_back(cr.prepared.tasks.size());
        cr.prepared.tasks.push_back(std::move(t));
      }
      sweep::run_tasks(cr.prepared, pending, jobs_, threads_, *cr.store, true,
                       [&](size_t, const nlohmann::json&, double) { ++simulated_; });
      for (size_t i = 0; i < points.size(); ++i) {
        auto it = values_.find(keys[i]);
        if (it == values_.end()) {
          const ResultFile file(cr.store->result_path(keys[i]).string());
          it = values_.emplace(keys[i], read_values(file)).first;
        }
        out[i][c] = &it->second;
      }
    }
    if (::isatty(STDERR_FILENO)) {
      std::cerr << "\r  calibrate: " << simulated_ << " runs simulated, " << values_.size()
                << " points known   " << std::flush;
    }
    return out;
  }
  int simulated() const { return simulated_; }

 private:
  static bool exists(const std::filesystem::path& p) { return std::filesystem::exists(p); }
  std::vector<CaseRun>& cases_;
  const std::vector<FitParameter>& parameters_;
  int jobs_, threads_;
  int simulated_ = 0;
  std::map<std::string, RowValues> values_;
};

std::string today() {
  // SOURCE_DATE_EPOCH (reproducible builds' convention) fixes the date a file records.
  std::time_t t = std::time(nullptr);
  if (const char* e = std::getenv("SOURCE_DATE_EPOCH"); e != nullptr && *e != '\0') {
    t = static_cast<std::time_t>(std::strtoll(e, nullptr, 10));
  }
  char text[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(text, sizeof text, "%Y-%m-%d", &tm);
  return text;
}

// The time an alpha-beta model predicts for a row, in the row's own metric (NaN where it does
// not apply): collective time (us), perftest latency (ps), perftest bandwidth (b/s).
bool alpha_beta_metric(const Observation& o) {
  return o.metric == "time_us" || o.metric == "t_typical_ps" || o.metric == "bw_average_bps";
}
double as_time(const Observation& o, double value) {
  return o.metric == "bw_average_bps" ? o.size * 8 / value : value;
}

struct AlphaBetaGroups {
  std::map<std::tuple<size_t, std::string, std::string>, AlphaBeta> fitted;
  nlohmann::json summary = nlohmann::json::array();
};

AlphaBetaGroups fit_alpha_beta_groups(const std::vector<Observation>& obs,
                                      const std::vector<std::string>& roles,
                                      const std::vector<Case>& cases) {
  std::map<std::tuple<size_t, std::string, std::string>,
           std::pair<std::vector<double>, std::vector<double>>>
      rows;
  for (size_t i = 0; i < obs.size(); ++i) {
    const Observation& o = obs[i];
    if (roles[i] != "fit" || !alpha_beta_metric(o)) continue;
    auto& r = rows[{o.case_index, o.op, o.metric}];
    r.first.push_back(o.size);
    r.second.push_back(as_time(o, o.measured));
  }
  AlphaBetaGroups out;
  for (const auto& [key, r] : rows) {
    const std::optional<AlphaBeta> ab = fit_alpha_beta(r.first, r.second);
    if (!ab) continue;
    out.fitted[key] = *ab;
    const std::string& metric = std::get<2>(key);
    // Times in seconds and bandwidth in bytes per second for the summary.
    const double to_seconds = metric == "time_us" ? 1e-6 : metric == "t_typical_ps" ? 1e-12 : 1;
    out.summary.push_back({{"case", cases[std::get<0>(key)].label},
                           {"op", std::get<1>(key)},
                           {"metric", metric},
                           {"alpha_s", ab->alpha * to_seconds},
                           {"bandwidth_Bps", ab->beta / to_seconds},
                           {"rows", r.first.size()}});
  }
  return out;
}

std::map<std::string, double> family_weights(const std::vector<std::string>& weights) {
  std::map<std::string, double> weight;
  for (const Family& f : families()) weight[f.name] = f.default_weight;
  for (const std::string& w : weights) {
    const size_t eq = w.find('=');
    const std::string family = w.substr(0, eq);
    if (eq == std::string::npos || !weight.count(family)) {
      throw po::error("--weight " + w +
                      ": expected FAMILY=W with FAMILY one of time, busbw, latency, bandwidth, "
                      "fct, counters");
    }
    try {
      weight[family] = std::stod(w.substr(eq + 1));
    } catch (const std::exception&) {
      throw po::error("--weight " + w + ": expected a number after '='");
    }
    if (!(weight[family] >= 0)) throw po::error("--weight " + w + ": must be 0 or more");
  }
  return weight;
}

// "fit", "held_out" or "" (neither) for each observation. A row both slices take is refused:
// held-out rows are never fitted.
std::vector<std::string> assign_roles(const std::vector<Observation>& obs,
                                      const std::vector<Case>& infos, const std::string& fit_on,
                                      const std::string& predict) {
  const Slice fit_slice = fit_on.empty() ? Slice::everything() : Slice::parse(fit_on, "--fit-on");
  const std::optional<Slice> predict_slice =
      predict.empty() ? std::nullopt : std::optional(Slice::parse(predict, "--predict"));
  std::vector<std::string> roles(obs.size());
  for (size_t i = 0; i < obs.size(); ++i) {
    const bool fitted = fit_slice.matches(obs[i], infos);
    const bool held = predict_slice ? predict_slice->matches(obs[i], infos) : !fit_slice.empty();
    if (fitted && predict_slice && held) {
      throw po::error("--fit-on " + (fit_on.empty() ? "(every measured row)" : fit_on) +
                      " and --predict " + predict + " overlap (e.g. " + obs[i].key +
                      "): held-out rows must not be fitted");
    }
    roles[i] = fitted ? "fit" : held ? "held_out" : "";
  }
  return roles;
}

// The observations the objective takes (fitted, with a weight above 0) and how many of each
// family; refused when there are none.
std::pair<std::vector<size_t>, std::map<std::string, int>> objective_rows(
    const std::vector<Observation>& obs, const std::vector<std::string>& roles,
    const std::map<std::string, double>& weight, const std::string& fit_on) {
  std::vector<size_t> rows;
  std::map<std::string, int> per_family;
  for (size_t i = 0; i < obs.size(); ++i) {
    if (roles[i] == "fit" && weight.at(obs[i].family) > 0) {
      rows.push_back(i);
      ++per_family[obs[i].family];
    }
  }
  if (rows.empty()) {
    throw po::error("no measured metric is in the fitted slice" +
                    (fit_on.empty() ? std::string() : " (--fit-on " + fit_on + ")") +
                    " with a weight above 0: nothing to fit");
  }
  return {rows, per_family};
}

// Measured rows the scenario does not produce are left out, and said.
void leave_out_unsimulated(std::vector<Observation>& obs, std::vector<std::string>& roles,
                           const std::vector<const RowValues*>& before,
                           const std::vector<Case>& infos, std::vector<std::string>& warnings) {
  std::map<size_t, std::vector<std::string>> missing;
  std::vector<Observation> kept;
  std::vector<std::string> kept_roles;
  for (size_t i = 0; i < obs.size(); ++i) {
    const RowValues& simulated = *before[obs[i].case_index];
    const auto it = simulated.find(value_key(obs[i].table, obs[i].key, obs[i].metric));
    if (it == simulated.end() || !std::isfinite(it->second)) {
      missing[obs[i].case_index].push_back(obs[i].table + " " + obs[i].key + " " + obs[i].metric);
      continue;
    }
    kept.push_back(obs[i]);
    kept_roles.push_back(roles[i]);
  }
  for (const auto& [c, keys] : missing) {
    warnings.push_back(std::to_string(keys.size()) + " measured metrics of case " + infos[c].label +
                       " have no row in the simulated run and are left out "
                       "(first: " +
                       keys.front() + "): extend the scenario to them");
  }
  obs = std::move(kept);
  roles = std::move(kept_roles);
}

// Parameter j's record: its range, start, calibrated value (as written and simulated) at
// coordinate u, and what the analysis and the fit say of it.
ParameterRecord parameter_record(const FitParameter& p, double fitted, double u,
                                 const Identifiability& id, size_t j, const FitResult& fit) {
  ParameterRecord r;
  r.path = p.path;
  r.unit = p.unit;
  r.lo = p.lo;
  r.hi = p.hi;
  r.initial = p.initial;
  r.fitted = fitted;
  r.effect = id.effect[j];
  r.reason = id.reason[j];
  if (id.status[j] == Identified::NoEffect) {
    r.status = "no_effect";
    return r;
  }
  if (id.status[j] == Identified::NotSeparately) {
    r.status = "not_separately_identifiable";
    return r;
  }
  r.status = u <= 1e-3 || u >= 1 - 1e-3 ? "at_bound" : "fitted";
  // d value / d u at the result turns the coordinate's standard error into the unit's.
  const double slope = p.logarithmic ? r.fitted * std::log(p.hi / p.lo) : p.hi - p.lo;
  r.standard_error =
      FitParameter::rounded(fit.standard_error[static_cast<Eigen::Index>(j)] * slope, 2);
  if (r.status == "at_bound") {
    r.reason = "fitted to an end of its range: the best value may lie beyond it (widen the range)";
  } else if (!std::isfinite(r.standard_error)) {
    r.reason =
        "weakly identified: the fitted rows do not depend on it near this value (no slope "
        "there, so no standard error; it may still matter elsewhere in its range)";
  } else if (r.standard_error > 0.5 * r.fitted) {
    r.reason = "weakly identified: its standard error is " +
               std::to_string(std::lround(100 * r.standard_error / r.fitted)) +
               " % of its value (the fitted rows barely depend on it near this value)";
  }
  return r;
}

// A measured metric beside the model before and after, and the alpha-beta model. Without a
// simulator the alpha-beta model is the model (NaN where it has no value for the row).
RowRecord row_record(const Observation& o, const Case& info, const std::string& role,
                     const RowValues* before, const RowValues* after, const AlphaBetaGroups& ab,
                     bool simulated) {
  RowRecord r;
  r.case_label = info.label;
  r.table = o.table;
  r.key = o.key;
  r.metric = o.metric;
  r.family = o.family;
  r.role = role;
  r.op = o.op;
  r.cc = info.cc;
  r.nodes = info.nodes;
  r.size = o.size;
  r.measured = o.measured;
  r.alpha_beta = std::nan("");
  if (const auto g = ab.fitted.find({o.case_index, o.op, o.metric}); g != ab.fitted.end()) {
    const double t = g->second.time(o.size);
    r.alpha_beta = o.metric == "bw_average_bps" ? o.size * 8 / t : t;
  }
  const std::string k = value_key(o.table, o.key, o.metric);
  r.before = simulated ? before->at(k) : r.alpha_beta;
  r.after = simulated ? after->at(k) : r.alpha_beta;
  r.error_before = relative_error(o, r.before);
  r.error_after = relative_error(o, r.after);
  return r;
}

nlohmann::json provenance(const std::vector<Case>& infos, const std::vector<std::string>& sets,
                          const std::string& fit_on, const std::string& predict,
                          const std::map<std::string, double>& weight) {
  nlohmann::json case_list = nlohmann::json::array();
  for (const Case& c : infos) {
    case_list.push_back({{"label", c.label},
                         {"measured", c.measured_file},
                         {"sha256", c.measured_sha256},
                         {"source", c.measured_source},
                         {"scenario", c.scenario_file},
                         {"cc", c.cc},
                         {"nodes", c.nodes},
                         {"ranks", c.ranks}});
  }
  nlohmann::json weight_json = nlohmann::json::object();
  for (const auto& [f, w] : weight) weight_json[f] = w;
  return {{"fabtwin_version", kVersion},
          {"date", today()},
          {"cases", case_list},
          {"set", sets},
          {"fit_slice", fit_on.empty() ? "every measured row" : fit_on},
          {"held_out_slice", !predict.empty()  ? predict
                             : !fit_on.empty() ? "the rows --fit-on leaves out"
                                               : "none"},
          {"weights", weight_json}};
}

// The calibrated parameter file: the fitted values where a scenario has them, and the
// provenance under `calibration` (a section every scenario accepts and the simulator ignores).
nlohmann::json parameter_file(const Report& report, const std::vector<FitParameter>& params,
                              std::vector<std::string>& warnings) {
  nlohmann::json file = nlohmann::json::object();
  nlohmann::json fitted = nlohmann::json::object(), not_identified = nlohmann::json::object();
  std::string names;
  for (size_t j = 0; j < params.size(); ++j) {
    const ParameterRecord& r = report.parameters[j];
    if (r.status != "fitted" && r.status != "at_bound") {
      not_identified[r.path] = r.reason;
      continue;
    }
    fitted[r.path] = {{"value", params[j].scenario_value(r.fitted)},
                      {"initial", params[j].scenario_value(r.initial)},
                      {"range", {params[j].scenario_value(r.lo), params[j].scenario_value(r.hi)}},
                      {"standard_error", std::isfinite(r.standard_error)
                                             ? nlohmann::json(params[j].text(r.standard_error))
                                             : nlohmann::json("unbounded")},
                      {"status", r.status}};
    if (r.path.find('[') != std::string::npos) {
      warnings.push_back(r.path +
                         " is inside a list, which `extends` replaces whole: it is in "
                         "the provenance but not set by the parameter file (give it "
                         "with --set)");
      continue;
    }
    apply_override(file, r.path + "=" + params[j].scenario_value(r.fitted).dump());
    names += (names.empty() ? "" : ", ") + r.path;
  }
  nlohmann::json errors = nlohmann::json::object();
  for (const SliceRecord& s : report.slices) {
    if (s.by != "all") continue;
    errors[s.role == "fit" ? "in_sample" : "held_out"][s.family] = s.error_after;
  }
  nlohmann::json c = report.provenance;
  c["fitted"] = fitted;
  c["not_identified"] = not_identified;
  c["objective"] = {{"before", report.fit["objective_before"]},
                    {"after", report.fit["objective_after"]},
                    {"method", report.fit["method"]}};
  c["mean_abs_relative_error"] = errors;
  file["description"] = "Calibrated parameters (" + (names.empty() ? "none" : names) +
                        ") from fabtwin calibrate on " +
                        report.provenance["date"].get<std::string>() + "; layer with \"extends\"";
  file["calibration"] = c;
  return file;
}

}  // namespace

int command_calibrate(const std::vector<std::string>& args) {
  po::options_description opts(
      "fabtwin calibrate --measured M.h5 [--scenario S.json] --fit PARAM[=LO:HI]...");
  std::vector<std::string> measured, scenarios, labels, fits, weights, sets;
  std::string fit_on, predict, out, json, report_h5, state, method = "auto";
  int jobs = 0, threads = 0, max_evaluations = 80;
  double min_effect = 0.01;
  opts.add_options()("help,h", "this help")(
      "measured", po::value(&measured)->composing(),
      "a measurement file (fabtwin import, fabtwin-hw, or a simulated run); repeatable")(
      "scenario", po::value(&scenarios)->composing(),
      "the scenario of the measured run: one for all measurements, or one per --measured, in "
      "order")("case", po::value(&labels)->composing(),
               "a name for each measurement (default 1, 2, ...), for slices and reports")(
      "fit", po::value(&fits)->composing(),
      "a parameter to fit, PATH or PATH=LO:HI (in its units: 2us:30us); repeatable")(
      "fit-on", po::value(&fit_on),
      "the slice fitted on, e.g. size<=64MiB or case=1node (default: every measured row)")(
      "predict", po::value(&predict),
      "the held-out slice the fit is validated on (default: what --fit-on leaves out)")(
      "weight", po::value(&weights)->composing(),
      "FAMILY=W: the weight of a metric family in the objective (time, busbw, latency, "
      "bandwidth, fct, counters)")("method", po::value(&method),
                                   "auto | least_squares | bobyqa (default auto)")(
      "max-evaluations", po::value(&max_evaluations), "points the fit may simulate (default 80)")(
      "min-effect", po::value(&min_effect),
      "a parameter that moves no fitted metric by this fraction over its range is not "
      "identifiable (default 0.01)")("set", po::value(&sets)->composing(),
                                     "override a value of every scenario: path=value")(
      "jobs", po::value(&jobs), "simulations at a time (default: every hardware thread)")(
      "threads", po::value(&threads), "engine threads per simulation (default 1)")(
      "state", po::value(&state),
      "folder keeping every simulated point, for resuming (default: OUT.state, or "
      "calibration.state)")("out", po::value(&out),
                            "write the calibrated parameter file (JSON, for extends)")(
      "json", po::value(&json), "write the report as JSON to FILE, or to stdout with -")(
      "report", po::value(&report_h5), "write the report as HDF5 (/calibration/...)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (measured.empty()) throw po::error("give at least one --measured file");
  if (!scenarios.empty() && scenarios.size() != 1 && scenarios.size() != measured.size()) {
    throw po::error("give one --scenario for all measurements or one per --measured (" +
                    std::to_string(measured.size()) + " measured, " +
                    std::to_string(scenarios.size()) + " scenarios)");
  }
  if (!labels.empty() && labels.size() != measured.size()) {
    throw po::error("give one --case per --measured, or none");
  }
  if (scenarios.empty() && !fits.empty()) {
    throw po::error(
        "--fit needs --scenario: the parameters are the simulator's, and the "
        "scenario says what run was measured");
  }
  if (method != "auto" && method != "least_squares" && method != "bobyqa") {
    throw po::error("--method must be auto, least_squares or bobyqa, not \"" + method + "\"");
  }
  if (max_evaluations < 1) throw po::error("--max-evaluations must be 1 or more");
  if (jobs < 0 || threads < 0) throw po::error("--jobs and --threads must be 0 or more");
  if (jobs == 0) jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (threads == 0) threads = 1;
  for (const auto& [file, option] : {std::pair{out, "--out"}, std::pair{json, "--json"}}) {
    if (!file.empty() && file != "-") check_writable(file, option);
  }
  if (!report_h5.empty()) check_writable(report_h5, "--report", OutputKind::Seekable);

  // The measurements, their scenarios, and the observations.
  std::vector<CaseRun> cases(measured.size());
  std::vector<Case> infos;
  std::vector<Observation> obs;
  for (size_t c = 0; c < measured.size(); ++c) {
    Case& info = cases[c].info;
    info.label = labels.empty() ? std::to_string(c + 1) : labels[c];
    info.measured_file = measured[c];
    const ResultFile file(measured[c]);
    info.measured_sha256 = file_sha256_hex(measured[c]);
    info.measured_source = file.text_attribute("source");
    const std::vector<Observation> rows = read_observations(file, c);
    if (rows.empty()) {
      throw std::runtime_error("'" + measured[c] +
                               "' has no measured rows a calibration can fit "
                               "(collectives/results, perftest, flows)");
    }
    obs.insert(obs.end(), rows.begin(), rows.end());
    if (!scenarios.empty()) {
      info.scenario_file = scenarios.size() == 1 ? scenarios[0] : scenarios[c];
      cases[c].doc = load_scenario(info.scenario_file, sets);
      const FabricSpec spec = FabricSpec::resolve(cases[c].doc);
      info.cc = spec.congestion_control.substr(0, spec.congestion_control.find(' '));
      if (!spec.collectives.empty()) {
        info.ranks = static_cast<int>(spec.collectives.specs[0].gpus.size());
        info.nodes = static_cast<int>(spec.collectives.spec_nodes[0].size());
      } else {
        info.nodes = spec.topology.hosts;
      }
    }
    infos.push_back(info);
  }

  // Roles: fitted on, held out, or neither.
  const std::map<std::string, double> weight = family_weights(weights);
  std::vector<std::string> roles = assign_roles(obs, infos, fit_on, predict);

  std::vector<FitParameter> params;
  for (const std::string& f : fits) {
    params.push_back(parse_fit_parameter(f, cases[0].doc.root, all_param_groups()));
    for (size_t k = 0; k + 1 < params.size(); ++k) {
      if (params[k].path == params.back().path) throw po::error("--fit " + f + " is given twice");
    }
  }

  Report report;
  for (const FitParameter& p : params) {
    if (p.initial_from_range) {
      report.warnings.push_back(p.path +
                                " is not in the scenario and its default is not a number "
                                "(a keyword, or a profile's value): the fit starts in the "
                                "middle of its range, at " +
                                p.text(p.initial) +
                                "; write the value in the scenario to start there");
    }
  }
  objective_rows(obs, roles, weight, fit_on);  // refused before anything is simulated
  std::vector<double> initial;
  for (const FitParameter& p : params) initial.push_back(p.initial);
  std::vector<const RowValues*> before(cases.size(), nullptr), after(cases.size(), nullptr);
  std::unique_ptr<Simulations> sims;
  if (!scenarios.empty()) {
    const std::filesystem::path state_dir = !state.empty() ? std::filesystem::path(state)
                                            : !out.empty()
                                                ? std::filesystem::path(out + ".state")
                                                : std::filesystem::path("calibration.state");
    for (CaseRun& cr : cases) {
      cr.prepared.base = cr.doc;
      cr.store = std::make_unique<sweep::SweepStore>(state_dir / ("case-" + cr.info.label));
      cr.store->open(sweep::text_hash(cr.doc.root.dump()), cr.info.scenario_file,
                     sweep::ResumeMode::Keep);
    }
    sims = std::make_unique<Simulations>(cases, params, jobs, threads);
    before = sims->run({initial})[0];
    leave_out_unsimulated(obs, roles, before, infos, report.warnings);
  }
  const auto [fitted_rows, per_family] = objective_rows(obs, roles, weight, fit_on);

  // The fit.
  FitOptions options;
  options.method = method;
  options.max_evaluations = max_evaluations;
  options.min_effect = min_effect;
  Eigen::VectorXd u0(static_cast<Eigen::Index>(params.size()));
  for (size_t j = 0; j < params.size(); ++j) u0[j] = params[j].coordinate(params[j].initial);
  const auto values_at = [&](const Eigen::VectorXd& u) {
    std::vector<double> v;
    for (size_t j = 0; j < params.size(); ++j) v.push_back(params[j].value(u[j]));
    return v;
  };
  Problem problem;
  problem.parameters = static_cast<int>(params.size());
  problem.weights.resize(static_cast<Eigen::Index>(fitted_rows.size()));
  for (size_t k = 0; k < fitted_rows.size(); ++k) {
    const std::string& f = obs[fitted_rows[k]].family;
    problem.weights[k] = weight.at(f) / per_family.at(f);
  }
  problem.evaluate = [&](const std::vector<Eigen::VectorXd>& points) {
    std::vector<std::vector<double>> values;
    for (const Eigen::VectorXd& u : points) values.push_back(values_at(u));
    const auto runs = sims->run(values);
    std::vector<Eigen::VectorXd> out;
    for (const auto& run : runs) {
      Eigen::VectorXd r(static_cast<Eigen::Index>(fitted_rows.size()));
      for (size_t k = 0; k < fitted_rows.size(); ++k) {
        const Observation& o = obs[fitted_rows[k]];
        r[k] = residual(o, run[o.case_index]->at(value_key(o.table, o.key, o.metric)));
      }
      out.push_back(r);
    }
    return out;
  };
  std::vector<std::string> names;
  for (const FitParameter& p : params) names.push_back(p.path);
  Eigen::VectorXd u = u0;
  if (!params.empty()) {
    const Identifiability id = analyse(problem, u0, names, options);
    std::vector<bool> free;
    for (const Identified s : id.status) free.push_back(s == Identified::Yes);
    const FitResult fit = calibration::fit(problem, u0, free, options);
    u = fit.u;
    // The calibrated values as the parameter file writes them, simulated as written.
    std::vector<double> fitted;
    for (size_t j = 0; j < params.size(); ++j) {
      fitted.push_back(free[j] ? FitParameter::rounded(params[j].value(u[j]), 5)
                               : params[j].initial);
    }
    after = sims->run({fitted})[0];
    for (size_t j = 0; j < params.size(); ++j) {
      report.parameters.push_back(parameter_record(params[j], fitted[j], u[j], id, j, fit));
    }
    report.fit = {{"method", fit.method},
                  {"evaluations", fit.evaluations},
                  {"converged", fit.converged},
                  {"objective_before", fit.objective_start},
                  {"objective_after", fit.objective},
                  {"notes", fit.notes}};
  } else {
    after = before;
    report.fit = {{"method", scenarios.empty() ? "alpha_beta only" : "none (no --fit)"},
                  {"evaluations", 0},
                  {"converged", true},
                  {"objective_before", 0.0},
                  {"objective_after", 0.0},
                  {"notes", nlohmann::json::array()}};
  }
  report.fit["simulated_runs"] = sims ? sims->simulated() : 0;
  if (::isatty(STDERR_FILENO) && sims) std::cerr << "\n";

  // Rows, the alpha-beta baseline, slices.
  const AlphaBetaGroups ab = fit_alpha_beta_groups(obs, roles, infos);
  report.fit["alpha_beta"] = ab.summary;
  size_t held_out_rows = 0, fit_rows = 0;
  for (size_t i = 0; i < obs.size(); ++i) {
    if (roles[i].empty()) continue;
    const Observation& o = obs[i];
    const RowRecord r = row_record(o, infos[o.case_index], roles[i], before[o.case_index],
                                   after[o.case_index], ab, sims != nullptr);
    if (!sims && !std::isfinite(r.after)) continue;  // rows alpha-beta cannot model
    (r.role == "fit" ? fit_rows : held_out_rows) += 1;
    report.rows.push_back(r);
  }
  report.slices = slice_errors(report.rows);
  report.fit["fit_rows"] = fit_rows;
  report.fit["objective_rows"] = fitted_rows.size();
  report.fit["held_out_rows"] = held_out_rows;

  report.provenance = provenance(infos, sets, fit_on, predict, weight);

  std::vector<std::string> file_warnings;
  const nlohmann::json params_file =
      out.empty() ? nlohmann::json() : parameter_file(report, params, file_warnings);
  report.warnings.insert(report.warnings.end(), file_warnings.begin(), file_warnings.end());
  if (json == "-") {
    std::cout << json_document(report_json(report));
  } else {
    print_report(report, std::cout);
    if (!json.empty()) write_text_atomically(json, json_document(report_json(report)));
  }
  std::ostream& say = json == "-" ? std::cerr : std::cout;
  if (!report_h5.empty()) {
    write_report_hdf5(report, report_h5);
    say << "report      " << report_h5 << "\n";
  }
  if (!out.empty()) {
    write_text_atomically(out, json_document(params_file));
    say << "parameters  " << out << " (layer it with \"extends\")\n";
  }
  return 0;
}

}  // namespace fabtwin
