// Reading a whole file a user named (a scenario, a flow-size CDF, a log, a hosts file), with one
// set of messages for what is not a readable file.
#pragma once

#include <filesystem>
#include <string>

namespace fabtwin {

// The bytes of `file`. `what` names the kind of file for the messages ("JSON file", "log"):
// std::runtime_error "expected a WHAT, found a directory at FILE", or "cannot read the WHAT
// FILE" when it is missing or cannot be opened.
std::string file_contents(const std::filesystem::path& file, const std::string& what);

}  // namespace fabtwin
