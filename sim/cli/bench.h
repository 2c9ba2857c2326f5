// `fabtwin bench`: the standard packet-level workload, or the event-queue microbenchmark.
#pragma once

#include <string>
#include <vector>

namespace fabtwin {

int command_bench(const std::vector<std::string>& args);

}  // namespace fabtwin
