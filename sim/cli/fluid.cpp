#include "sim/cli/fluid.h"

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "sim/atomic_file.h"
#include "sim/cli/report.h"
#include "sim/cli/scenario_command.h"
#include "sim/utf8_text.h"

namespace fabtwin {

namespace po = boost::program_options;

namespace {

std::string kb(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f KB", bytes / 1e3);
  return s;
}

std::string gbps(double bps) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f Gb/s", bps / 1e9);
  return s;
}

std::optional<Time> time_option(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return std::nullopt;
  try {
    return parse_time(vm[name].as<std::string>());
  } catch (const std::exception& e) {
    throw po::error(std::string("--") + name + ": " + e.what());
  }
}

}  // namespace

std::vector<FluidQueueRecord> FluidResult::queue_rows() const {
  std::vector<FluidQueueRecord> rows(trajectory.samples);
  for (size_t j = 0; j < rows.size(); ++j) {
    rows[j] = {setup.sample * static_cast<int64_t>(j), trajectory.queue_bytes[j],
               trajectory.marking_probability[j], trajectory.arrival_bps[j]};
  }
  return rows;
}

std::vector<RateSampleRecord> FluidResult::rate_rows() const {
  std::vector<RateSampleRecord> rows;
  const DcqcnTrajectory& t = trajectory;
  const size_t n = static_cast<size_t>(t.flows);
  for (size_t j = 0; j < t.samples; ++j) {
    for (size_t i = 0; i < n; ++i) {
      if (!t.active(j, static_cast<int>(i), setup.params.sample_s)) continue;
      rows.push_back({setup.sample * static_cast<int64_t>(j), static_cast<uint32_t>(i),
                      static_cast<int64_t>(t.rate_bps[j * n + i]),
                      static_cast<int64_t>(t.target_bps[j * n + i]), t.alpha[j * n + i]});
    }
  }
  return rows;
}

FluidResult run_fluid(const FabricSpec& spec, const FluidOptions& options) {
  FluidResult r;
  r.scenario_text = spec.scenario_text;
  r.scenario_file = spec.scenario_file;
  r.bottleneck = fluid_bottleneck(spec);
  r.setup = fluid_setup(spec, r.bottleneck, options);
  const auto start = std::chrono::steady_clock::now();
  r.trajectory = dcqcn_trajectory(r.setup.params);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.summary = summarize(r.trajectory, r.setup.params, r.setup.after.seconds());
  try {
    r.fixed_point = dcqcn_fixed_point(r.bottleneck.model);
  } catch (const std::runtime_error& e) {
    r.fixed_point_error = e.what();
  }
  return r;
}

void print_fluid_summary(const FluidResult& r, std::ostream& out) {
  const FluidBottleneck& b = r.bottleneck;
  const FluidSetup& s = r.setup;
  const DcqcnTrajectorySummary& m = r.summary;
  const DcqcnFluidParams& p = b.model;
  char line[256];
  out << "fluid       DCQCN fluid model (CoNEXT 2016): " << p.flows << " flows into host "
      << b.receiver << ", C = " << gbps(p.capacity_bps) << ", line rate " << gbps(b.line_rate_bps)
      << "\n";
  out << "  model     tau* " << format_time(s.delay)
      << (s.delay == b.base_rtt ? " (base RTT)" : " (base RTT " + format_time(b.base_rtt) + ")")
      << ", " << format_time(s.duration) << " in steps of "
      << format_time(Time{static_cast<int64_t>(std::llround(r.trajectory.step_s * 1e12))})
      << ", samples every " << format_time(s.sample) << "; " << p.packet_bytes
      << " B packets, Kmin " << kb(p.kmin_bytes) << ", Kmax " << kb(p.kmax_bytes) << ", Pmax "
      << p.pmax << ", g " << p.g << "\n";
  if (r.fixed_point) {
    const DcqcnFixedPoint& f = *r.fixed_point;
    std::snprintf(line, sizeof line,
                  "  fixed     q* %s, p* %.4g, R_T* %s, R_C* = C/N %s, alpha* %.4f\n",
                  kb(f.queue_bytes).c_str(), f.p, gbps(f.target_rate_bps).c_str(),
                  gbps(f.rate_bps).c_str(), f.alpha);
    out << line;
  } else {
    out << "  fixed     none below Kmax: " << r.fixed_point_error << "\n";
  }
  std::snprintf(
      line, sizeof line, "  window    %s .. %s\n",
      format_time(Time{static_cast<int64_t>(std::llround(m.window_start_s * 1e12))}).c_str(),
      format_time(Time{static_cast<int64_t>(std::llround(m.window_end_s * 1e12))}).c_str());
  out << line;
  std::string versus;
  if (r.fixed_point) {
    char v[64];
    std::snprintf(v, sizeof v, " (%+.2f%% from q*)",
                  100 * (m.mean_queue_bytes / r.fixed_point->queue_bytes - 1));
    versus = v;
  }
  std::snprintf(line, sizeof line, "  queue     mean %s%s, min %s, max %s\n",
                kb(m.mean_queue_bytes).c_str(), versus.c_str(), kb(m.min_queue_bytes).c_str(),
                kb(m.max_queue_bytes).c_str());
  out << line;
  if (m.oscillating) {
    char period[48] = "";
    if (m.period_s > 0) std::snprintf(period, sizeof period, ", period %.3g ms", m.period_s * 1e3);
    std::snprintf(
        line, sizeof line, "  stability oscillating: amplitude %s (%.0f%% of the mean)%s\n",
        kb(m.amplitude_bytes).c_str(), 100 * m.amplitude_bytes / m.mean_queue_bytes, period);
  } else {
    std::snprintf(line, sizeof line, "  stability settled: amplitude %s\n",
                  kb(m.amplitude_bytes).c_str());
  }
  out << line;
  double lo = 1e300, hi = 0, sum = 0, target = 0, alpha = 0;
  for (size_t i = 0; i < m.mean_rate_bps.size(); ++i) {
    lo = std::min(lo, m.mean_rate_bps[i]);
    hi = std::max(hi, m.mean_rate_bps[i]);
    sum += m.mean_rate_bps[i];
    target += m.mean_target_bps[i];
    alpha += m.mean_alpha[i];
  }
  const double n = static_cast<double>(m.mean_rate_bps.size());
  std::snprintf(line, sizeof line,
                "  rates     mean R_C %s per flow (%s .. %s), R_T %s, alpha %.4f\n",
                gbps(sum / n).c_str(), gbps(lo).c_str(), gbps(hi).c_str(), gbps(target / n).c_str(),
                alpha / n);
  out << line;
  std::snprintf(line, sizeof line, "  link      utilization %.4f\n", m.utilization);
  out << line;
  std::snprintf(line, sizeof line, "  wall      %.1f ms\n", r.wall_seconds * 1e3);
  out << line;
  out << "approximations\n";
  for (const std::string& a : b.approximations) out << "  - " << a << "\n";
}

nlohmann::json fluid_json_report(const FluidResult& r) {
  const FluidBottleneck& b = r.bottleneck;
  const FluidSetup& s = r.setup;
  const DcqcnTrajectorySummary& m = r.summary;
  const DcqcnFluidParams& p = b.model;
  nlohmann::json j;
  j["fabtwin_version"] = kVersion;
  j["source"] = "fluid";
  j["run_id"] = r.run_id;
  j["scenario_file"] = r.scenario_file;
  j["parameters"] = {
      {"flows", p.flows},
      {"capacity_bps", p.capacity_bps},
      {"line_rate_bps", b.line_rate_bps},
      {"packet_bytes", p.packet_bytes},
      {"kmin_bytes", p.kmin_bytes},
      {"kmax_bytes", p.kmax_bytes},
      {"pmax", p.pmax},
      {"g", p.g},
      {"tau_ps", Time{static_cast<int64_t>(std::llround(p.tau_s * 1e12))}.ps},
      {"tau_prime_ps", Time{static_cast<int64_t>(std::llround(p.tau_prime_s * 1e12))}.ps},
      {"timer_ps", Time{static_cast<int64_t>(std::llround(p.timer_s * 1e12))}.ps},
      {"byte_counter_bytes", p.byte_counter_bytes},
      {"fast_recovery", p.fast_recovery},
      {"rate_ai_bps", p.rate_ai_bps},
      {"initial_alpha", b.initial_alpha},
      {"delay_ps", s.delay.ps},
      {"base_rtt_ps", b.base_rtt.ps},
      {"duration_ps", s.duration.ps},
      {"step_ps", std::llround(r.trajectory.step_s * 1e12)},
      {"sample_ps", s.sample.ps},
      {"after_ps", s.after.ps},
      {"receiver", b.receiver}};
  if (r.fixed_point) {
    const DcqcnFixedPoint& f = *r.fixed_point;
    j["fixed_point"] = {{"queue_bytes", f.queue_bytes},
                        {"p", f.p},
                        {"alpha", f.alpha},
                        {"rate_bps", f.rate_bps},
                        {"target_rate_bps", f.target_rate_bps},
                        {"p_taylor", f.p_taylor}};
  } else {
    j["fixed_point"] = nullptr;
    j["fixed_point_error"] = r.fixed_point_error;
  }
  j["trajectory"] = {{"window_start_ps", std::llround(m.window_start_s * 1e12)},
                     {"window_end_ps", std::llround(m.window_end_s * 1e12)},
                     {"mean_queue_bytes", m.mean_queue_bytes},
                     {"min_queue_bytes", m.min_queue_bytes},
                     {"max_queue_bytes", m.max_queue_bytes},
                     {"amplitude_bytes", m.amplitude_bytes},
                     {"mean_marking_probability", m.mean_marking_probability},
                     {"utilization", m.utilization},
                     {"oscillating", m.oscillating},
                     {"period_ps", std::llround(m.period_s * 1e12)},
                     {"mean_rate_bps", m.mean_rate_bps},
                     {"mean_target_bps", m.mean_target_bps},
                     {"mean_alpha", m.mean_alpha}};
  j["approximations"] = b.approximations;
  j["wall_seconds"] = r.wall_seconds;
  return j;
}

int command_fluid(const std::vector<std::string>& args) {
  po::options_description opts("fabtwin fluid SCENARIO");
  std::vector<std::string> sets;
  std::string out, json;
  opts.add_options()("help,h", "this help")("set", po::value(&sets)->composing(),
                                            "override a scenario value: path=value (repeatable)")(
      "out", po::value(&out), "write the trajectory as HDF5 (docs/hdf5-schema.md)")(
      "json", po::value(&json), "write the summary numbers as JSON to FILE, or to stdout with -")(
      "duration", po::value<std::string>(), "model time to integrate (default: run.end)")(
      "delay", po::value<std::string>(),
      "control-loop delay tau* (default: the base RTT, a data frame out and a CNP back)")(
      "step", po::value<std::string>(),
      "largest integration step (default 5us; the step used divides the sample interval)")(
      "sample", po::value<std::string>(),
      "output interval (default: output.rate_sample_interval, or 10us)")(
      "after", po::value<std::string>(),
      "the summary averages from this time on (default: half the duration)")(
      "scenario", po::value<std::string>(), "scenario file");
  po::variables_map vm;
  if (const std::optional<int> status = parse_scenario_command(args, opts, vm)) return *status;
  FluidOptions options;
  options.duration = time_option(vm, "duration");
  options.delay = time_option(vm, "delay");
  options.step = time_option(vm, "step");
  options.sample = time_option(vm, "sample");
  options.after = time_option(vm, "after");
  const FabricSpec spec =
      FabricSpec::resolve(load_scenario(vm["scenario"].as<std::string>(), sets));
  if (!out.empty()) check_writable(out, "--out", OutputKind::Seekable);
  if (!json.empty() && json != "-") check_writable(json, "--json");
  FluidResult result;
  try {
    result = run_fluid(spec, options);
  } catch (const std::invalid_argument& e) {
    throw po::error(e.what());
  }
  result.run_id = new_run_id();
  const bool json_to_stdout = json == "-";
  std::ostream& say = json_to_stdout ? std::cerr : std::cout;
  if (!json_to_stdout) print_fluid_summary(result, std::cout);
  if (!out.empty()) {
    write_fluid_hdf5(result, out);
    say << "results     " << out << "\n";
  }
  if (json_to_stdout) {
    std::cout << json_document(fluid_json_report(result));
  } else if (!json.empty()) {
    write_text_atomically(json, json_document(fluid_json_report(result)));
  }
  return 0;
}

}  // namespace fabtwin
