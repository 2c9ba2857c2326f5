// What a host observer could not read: a missing RDMA device or port, a network interface that
// does not exist, statistics a driver does not offer. The message names the device, the path
// or the call, what was expected and what was found.
#pragma once

#include <stdexcept>

namespace fabtwin::hw {

class ObserveError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace fabtwin::hw
