// The command line of a command that takes one scenario file and options (run, deadlock).
#pragma once

#include <boost/program_options.hpp>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace fabtwin {

// Parses `args` against `opts`, which declares "help" and "scenario", with the scenario as the
// positional argument. Returns the exit status when the command should not go on (--help: 0,
// no scenario: 2, after printing the options), else nullopt with `vm` filled.
inline std::optional<int> parse_scenario_command(
    const std::vector<std::string>& args, const boost::program_options::options_description& opts,
    boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help") || !vm.count("scenario")) {
    std::cout << opts;
    return vm.count("help") ? 0 : 2;
  }
  return std::nullopt;
}

}  // namespace fabtwin
