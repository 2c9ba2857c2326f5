// What a resolved scenario will cost, estimated before it runs. Settings whose cost has no bound
// worth running (a sampling period finer than any frame, an ACK timeout no ACK can beat, which
// retransmits forever) are refused with the path; costly ones (samples that fill memory, a
// collective sweep the run ends before) get a warning that says the expected cost.
#pragma once

#include <string>
#include <vector>

namespace fabtwin {

struct FabricSpec;

// The finest sampling period accepted (output.queue_sample_interval, rate_sample_interval).
inline constexpr int64_t kMinSampleIntervalPs = 1000;
// Samples that fill more than this per simulated millisecond get a warning.
inline constexpr double kSampleBytesPerMsWarning = 256e6;

// Throws ScenarioError for a setting whose run would not end in any useful time; returns the
// warnings (one sentence each, naming the path and the expected cost).
std::vector<std::string> check_run_cost(const FabricSpec& spec);

}  // namespace fabtwin
