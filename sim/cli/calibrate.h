// `fabtwin calibrate --measured M.h5 --scenario S.json --fit PARAM[=LO:HI]...`: fits the
// model's parameters to measurements (imported perftest or nccl-tests logs, fabtwin-hw runs),
// with the simulator in the loop, on one slice of the measured rows, and reports the error on
// the rest (docs/calibration.md). Without --scenario it fits the closed-form alpha-beta model
// alone.
#pragma once

#include <string>
#include <vector>

namespace fabtwin {

int command_calibrate(const std::vector<std::string>& args);

}  // namespace fabtwin
