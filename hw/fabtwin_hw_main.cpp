// The `fabtwin-hw` command: a scenario's traffic on real hosts (docs/hardware.md).
#include <boost/program_options.hpp>
#include <iostream>

#include "hw/control/job_token.h"
#include "hw/run/hw_runner.h"
#include "hw/run/local_control_group.h"
#include "hw/run/tcp_transport.h"
#include "sim/atomic_file.h"
#include "sim/cli/report.h"
#include "sim/cli/scenario_command.h"

namespace po = boost::program_options;
using namespace fabtwin;
using namespace fabtwin::hw;

namespace {

constexpr const char* kUsage =
    "usage: fabtwin-hw <command> [options]\n"
    "\n"
    "commands:\n"
    "  run SCENARIO [--set path=value]... [--rank R] [--out FILE.h5] [--json FILE|-]\n"
    "      [--token-file FILE]\n"
    "                      run the scenario's flows on the hosts of its `hw` section (a hosts\n"
    "                      file, or the ranks of mpirun), one process per real host; rank 0\n"
    "                      writes the measurements in the simulator's schema. The job token\n"
    "                      comes from --token-file, FABTWIN_HW_TOKEN_FILE or FABTWIN_HW_TOKEN\n"
    "  check SCENARIO [--set path=value]... [--rank R]\n"
    "                      print the host mapping and the plan, and check nothing is missing\n"
    "  token --out FILE [--replace]\n"
    "                      write a new random job token (mode 0600); copy it to every host\n"
    "\n"
    "options: --help, --version\n";

po::options_description scenario_options(const std::string& title, RunOptions& o) {
  po::options_description opts(title);
  opts.add_options()("help,h", "this help")("set", po::value(&o.sets)->composing(),
                                            "override a scenario value: path=value (repeatable)")(
      "rank", po::value(&o.rank),
      "this process's rank (default: from mpirun, or 0 for one process)")(
      "scenario", po::value<std::string>(), "scenario file");
  return opts;
}

int command_run(const std::vector<std::string>& args) {
  RunOptions o;
  std::string token_file;
  po::options_description opts = scenario_options("fabtwin-hw run SCENARIO", o);
  opts.add_options()("out", po::value(&o.out), "write the measurement file (HDF5), rank 0")(
      "json", po::value(&o.json), "write the tables as JSON to FILE, or to stdout with -")(
      "token-file", po::value(&token_file), "file holding the job token (mode 0600)");
  po::variables_map vm;
  if (const auto status = parse_scenario_command(args, opts, vm)) return *status;
  o.scenario = vm["scenario"].as<std::string>();
  const PreparedRun run = prepare_run(o);
  const std::unique_ptr<DataTransport> transport = make_transport(run);
  if (run.mapping.ranks == 1) {
    // One process plays every host: its control group needs no network and no token.
    auto group = LocalControlGroup::create(1);
    return execute_run(run, *group[0], *transport, o, std::cout);
  }
  ControlConfig config = control_config(run);
  const JobToken token = load_job_token(token_file);
  config.token = token.bytes;
  if (run.rank == 0) {
    std::cerr << "fabtwin-hw: rank 0 of " << config.ranks << ", control " << config.root_address
              << ":" << config.root_port << ", token " << token.fingerprint() << " ("
              << token.source << "), plan " << run.plan.hash.substr(0, 16) << "\n";
  }
  const std::unique_ptr<ControlGroup> control = ControlGroup::join(config);
  return execute_run(run, *control, *transport, o, std::cout);
}

int command_check(const std::vector<std::string>& args) {
  RunOptions o;
  po::options_description opts = scenario_options("fabtwin-hw check SCENARIO", o);
  po::variables_map vm;
  if (const auto status = parse_scenario_command(args, opts, vm)) return *status;
  o.scenario = vm["scenario"].as<std::string>();
  const PreparedRun run = prepare_run(o);
  print_check(run, std::cout);
  const std::string transport = check_transport(run);  // throws, saying what is missing
  std::cout << "transport   " << transport << "\n";
  return 0;
}

int command_token(const std::vector<std::string>& args) {
  po::options_description opts("fabtwin-hw token --out FILE [--replace]");
  std::string out;
  opts.add_options()("help,h", "this help")("out", po::value(&out), "the token file to create")(
      "replace", "replace an existing token file");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts;
    return 0;
  }
  if (out.empty()) throw po::error("give the file to write: fabtwin-hw token --out FILE");
  const JobToken token = write_new_token_file(out, vm.count("replace") > 0);
  std::cout << "token       " << out << " (fingerprint " << token.fingerprint()
            << "); copy it to every host with mode 0600\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::cout << "fabtwin-hw " << kVersion << "\n";
    return 0;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return command_run(args);
    if (command == "check") return command_check(args);
    if (command == "token") return command_token(args);
    std::cerr << "fabtwin-hw: unknown command \"" << command << "\"\n\n" << kUsage;
    return 2;
  } catch (const ScenarioError& e) {
    std::cerr << "fabtwin-hw: " << e.what() << "\n";
    return 2;
  } catch (const MappingError& e) {
    std::cerr << "fabtwin-hw " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const TokenError& e) {
    std::cerr << "fabtwin-hw " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const po::error& e) {
    std::cerr << "fabtwin-hw " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    std::cerr << "fabtwin-hw " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const OutputPathError& e) {
    std::cerr << "fabtwin-hw " << command << ": " << e.what() << "\n";
    return 2;
  } catch (const ControlError& e) {
    std::cerr << "fabtwin-hw " << command << ": control network: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "fabtwin-hw " << command << ": error: " << e.what() << "\n";
    return 1;
  }
}
