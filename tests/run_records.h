// Looking things up in a run's records, for tests that check whole runs.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "models/fabric/run_result.h"

namespace fabtwin::testing {

// One counter summed over every port and priority of the run.
inline int64_t total(const RunResult& r, int64_t PriorityCounters::*field) {
  int64_t n = 0;
  for (const PortRecord& p : r.ports) n += p.total(field);
  return n;
}

// The port of `node` that faces `peer`; fails the test when there is none.
inline const PortRecord& port_record(const RunResult& r, const std::string& node,
                                     const std::string& peer) {
  for (const PortRecord& p : r.ports) {
    if (p.node == node && p.peer == peer) return p;
  }
  FAIL("no port " << node << " -> " << peer);
  return r.ports.front();
}

}  // namespace fabtwin::testing
