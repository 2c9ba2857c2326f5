// The `fabtwin` command: run a scenario, describe parameters, validate, benchmark.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "hw/import/log_lines.h"
#include "hw/run/hw_config.h"
#include "models/fabric/fabric.h"
#include "sim/atomic_file.h"
#include "sim/cli/bench.h"
#include "sim/cli/calibrate.h"
#include "sim/cli/compare.h"
#include "sim/cli/deadlock.h"
#include "sim/cli/describe.h"
#include "sim/cli/fluid.h"
#include "sim/cli/import.h"
#include "sim/cli/report.h"
#include "sim/cli/scenario_command.h"
#include "sim/cli/sweep.h"
#include "sim/cli/trace.h"
#include "sim/cli/validation.h"
#include "sim/huge_pages.h"
#include "sim/sweep/sweep_file.h"
#include "sim/utf8_text.h"
#ifdef FABTWIN_HAVE_MPI
#include <mpi.h>

#include "sim/mpi_transport.h"
#endif

namespace po = boost::program_options;
using namespace fabtwin;

namespace {

constexpr const char* kUsage =
    "usage: fabtwin <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO [--set path=value]... [--out FILE.h5] [--json FILE|-] [--trace FILE]\n"
    "      [--threads N]   simulate a scenario and print a summary; --trace writes its\n"
    "                      timeline (collectives, pauses, queues) for ui.perfetto.dev\n"
    "  describe [MODEL]    list parameters: meaning, unit, default, source\n"
    "  describe --markdown | --json-schema\n"
    "                      the same as docs/model-reference.md or a JSON Schema for editors\n"
    "  describe --hdf5-schema [DOC]\n"
    "                      the HDF5 tables' fields as Markdown; with DOC (docs/hdf5-schema.md),\n"
    "                      that file with its generated tables brought up to date\n"
    "  validate [CASE]...  run validation cases against their references\n"
    "  bench [--queue]     standard benchmark (k=8 fat-tree permutation) or event-queue micro\n"
    "  deadlock SCENARIO [--failures 0|1|2] [--json FILE|-]\n"
    "                      static analysis: cyclic buffer dependencies PFC can deadlock on,\n"
    "                      also under every single/double link failure; exit 1 if any\n"
    "  fluid SCENARIO [--set path=value]... [--out FILE.h5] [--json FILE|-] [--duration T]\n"
    "      [--delay T] [--step T] [--sample T] [--after T]\n"
    "                      integrate the DCQCN fluid model (CoNEXT 2016) for the scenario's\n"
    "                      bottleneck: queue, rate, target and alpha over time, in milliseconds\n"
    "                      (docs/fluid-model.md)\n"
    "  sweep SWEEP.json [--jobs N] [--out DIR] [--objective \"min|max METRIC\"]...\n"
    "      [--resume=keep | --restart] [--point-results] [--set path=value]... [--dry-run]\n"
    "                      run a parameter sweep (axes over any scenario path, grid, random\n"
    "                      or Latin-hypercube designs, seeds): a table of metrics with 95%\n"
    "                      confidence intervals, resumable, concurrent, over MPI ranks under\n"
    "                      mpirun (docs/sweeps.md)\n"
    "  import perftest|nccl-tests LOG [--out FILE.h5] [--json FILE|-] [--op OP]\n"
    "                      read a perftest or nccl-tests log into a measurement file in the\n"
    "                      simulator's schema (docs/measurements.md)\n"
    "  compare A.h5 B.h5 [--json FILE|-]\n"
    "                      metric by metric error of A (a simulated run) against B (a\n"
    "                      measurement): rows matched by key, unmatched rows listed; exit 1 if\n"
    "                      nothing matches\n"
    "  calibrate --measured M.h5 [--scenario S.json] [--fit PARAM[=LO:HI]]...\n"
    "      [--fit-on SLICE] [--predict SLICE] [--weight FAMILY=W]... [--out PARAMS.json]\n"
    "      [--json FILE|-] [--report FILE.h5] [--jobs N] [--state DIR]\n"
    "                      fit the model's parameters to measurements with the simulator in\n"
    "                      the loop, on one slice of the measured rows, and report the error\n"
    "                      on the held-out rest (docs/calibration.md)\n"
    "\n"
    "options: --help, --version\n";

// A progress line on stderr, at most twice a second, only when stderr is a terminal.
Simulator::Progress progress_line(Time end) {
  if (!::isatty(STDERR_FILENO)) return {};
  auto start = std::chrono::steady_clock::now();
  auto last = start;
  return [=](Time now, uint64_t events) mutable {
    const auto t = std::chrono::steady_clock::now();
    if (t - last < std::chrono::milliseconds(500)) return;
    last = t;
    const double wall = std::chrono::duration<double>(t - start).count();
    const double fraction =
        end.ps > 0 ? static_cast<double>(now.ps) / static_cast<double>(end.ps) : 0;
    const double eta = fraction > 0 ? wall * (1 - fraction) / fraction : 0;
    std::fprintf(stderr, "\r  sim %s (%.1f%% of end)  %.2f M events/s  ETA %.0f s (at most)   ",
                 format_time(now).c_str(), 100 * fraction, static_cast<double>(events) / wall / 1e6,
                 eta);
  };
}

int command_run(const std::vector<std::string>& args, Transport* transport) {
  po::options_description opts("fabtwin run SCENARIO");
  std::vector<std::string> sets;
  std::string out, json, trace;
  int threads = 0;
  opts.add_options()("help,h", "this help")("set", po::value(&sets)->composing(),
                                            "override a scenario value: path=value (repeatable)")(
      "out", po::value(&out), "write an HDF5 result file")(
      "json", po::value(&json),
      "write the summary numbers as JSON to FILE, or to stdout with - (no summary then)")(
      "trace", po::value(&trace),
      "write the timeline (collectives, PFC pauses, queue depths) as a Chrome/Perfetto trace")(
      "threads", po::value(&threads), "threads to simulate on (default: run.threads; 0 = all)")(
      "scenario", po::value<std::string>(), "scenario file");
  po::variables_map vm;
  if (const std::optional<int> status = parse_scenario_command(args, opts, vm)) return *status;
  if (threads < 0) throw po::error("--threads must be 0 or more");
  const ScenarioDocument doc = load_scenario(vm["scenario"].as<std::string>(), sets);
  FabricSpec spec = FabricSpec::resolve(doc);
  hw::read_hw_config(doc.root);  // not simulated, but a mistake there is reported here too
  if (out.empty()) out = spec.output.hdf5;
  // Every output file can be written, before the run rather than after it.
  const bool root_rank = transport == nullptr || transport->rank() == 0;
  if (root_rank) {
    for (const std::string& w : spec.warnings) std::cerr << "fabtwin: warning: " << w << "\n";
    if (!out.empty()) check_writable(out, "--out", OutputKind::Seekable);
    if (!json.empty() && json != "-") check_writable(json, "--json");
    if (!trace.empty()) check_writable(trace, "--trace");
  }
  Fabric fabric(std::move(spec), threads, transport);
  const bool root = transport == nullptr || transport->rank() == 0;
  RunResult result = fabric.run(root ? progress_line(fabric.run_config().end) : nullptr);
  if (!root) return 0;           // rank 0 reports and writes the results of every rank
  result.run_id = new_run_id();  // the same in the summary and in every file written below
  if (::isatty(STDERR_FILENO)) std::fprintf(stderr, "\r%80s\r", "");
  // --json - puts the JSON report on stdout in place of the summary (for scripts).
  const bool json_to_stdout = json == "-";
  std::ostream& say = json_to_stdout ? std::cerr : std::cout;
  if (!json_to_stdout) print_summary(result, std::cout);
  if (!out.empty()) {
    write_hdf5(result, out);
    say << "results     " << out << "\n";
  }
  if (json_to_stdout) {
    std::cout << json_document(json_report(result));
  } else if (!json.empty()) {
    write_json_report(result, json);
  }
  if (!trace.empty()) {
    write_trace(result, trace);
    say << "trace       " << trace << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything sizeable is allocated: a fabric's state then lies in 2 MiB pages.
  advise_heap_huge_pages(default_heap_reserve());
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "fabtwin " << kVersion << "\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  Transport* transport = nullptr;
#ifdef FABTWIN_HAVE_MPI
  // Under mpirun the ranks share one run; started plainly, fabtwin does not touch MPI.
  std::unique_ptr<MpiTransport> mpi;
  const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
  if (under_mpirun && (command == "run" || command == "sweep")) {
    MPI_Init(&argc, &argv);
    mpi = std::make_unique<MpiTransport>();
    transport = mpi.get();
  }
  struct Finalize {
    bool on;
    ~Finalize() {
      if (on) MPI_Finalize();
    }
  } finalize{transport != nullptr};
  // One rank failing would leave the others waiting in a collective: stop them all.
  auto fail = [&](int code) {
    if (transport != nullptr && transport->ranks() > 1) MPI_Abort(MPI_COMM_WORLD, code);
    return code;
  };
#else
  auto fail = [](int code) { return code; };
#endif
  const bool quiet = transport != nullptr && transport->rank() != 0;
  try {
    if (command == "run") return command_run(args, transport);
    if (command == "describe") return command_describe(args);
    if (command == "validate") return command_validate(args);
    if (command == "bench") return command_bench(args);
    if (command == "deadlock") return command_deadlock(args);
    if (command == "fluid") return command_fluid(args);
    if (command == "sweep") return command_sweep(args, transport);
    if (command == "import") return command_import(args);
    if (command == "compare") return command_compare(args);
    if (command == "calibrate") return command_calibrate(args);
    std::cerr << "fabtwin: unknown command \"" << command << "\"\n\n" << kUsage;
    return 2;
  } catch (const ScenarioError& e) {
    // Every rank reads the same scenario, so every rank stops here alike; one of them says so.
    if (!quiet) std::cerr << "fabtwin: " << e.what() << "\n";
    return 2;
  } catch (const sweep::SweepError& e) {
    // Every rank expands and checks the same sweep; rank 0 alone says what is wrong.
    if (!quiet && *e.what() != '\0') std::cerr << "fabtwin sweep: " << e.what() << "\n";
    return 2;
  } catch (const OutputPathError& e) {
    // Only the rank that writes checks its outputs: the others must be stopped too.
    std::cerr << "fabtwin " << command << ": " << e.what() << "\n";
    return fail(2);
  } catch (const hw::LogFormatError& e) {
    std::cerr << "fabtwin " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    if (!quiet) std::cerr << "fabtwin " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "fabtwin: error: " << e.what() << "\n";
    return fail(1);
  }
}
