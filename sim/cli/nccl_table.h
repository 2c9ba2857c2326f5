// The simulated collectives as nccl-tests prints them (util.cu, nccl-tests 2.19.x), so that a
// simulated table and a measured log can be read, diffed and parsed alike.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "models/fabric/run_result.h"

namespace fabtwin {

// NCCL version whose tuning model (algorithm, protocol and channel choice) the simulator follows;
// named in the table's preamble.
inline constexpr const char* kNcclTuningModelVersion = "2.30.7";

// nccl-tests' getFloatStr: `value` right-aligned in `width` characters, with two decimals, then
// one, then none, then in exponent notation, whichever is the first to fit.
std::string nccl_float_text(double value, int width);

// The nccl-tests binary that runs `op`: all_reduce -> all_reduce_perf, all_to_all -> alltoall_perf.
std::string nccl_perf_program(const std::string& op);

// The rows of traffic generator `generator` as an nccl-tests table (header, units, one line per
// size, average bus bandwidth), after a two-line preamble saying what was simulated.
std::string nccl_tests_table(const RunResult& r, uint32_t generator);

// Every generator's table, each under a heading line; nothing when the run had no collectives.
void print_collectives(const RunResult& r, std::ostream& out);

}  // namespace fabtwin
