// Max-min fair rates by progressive filling and the fluid completion times of flows that start
// together, on small cases computed by hand.
#include "models/fabric/max_min_fair.h"
#include "test_support.h"

using namespace fabtwin;

namespace {
FlowPath on(std::initializer_list<uint32_t> links, double weight = 1.0) {
  FlowPath p;
  for (uint32_t l : links) p.emplace_back(l, weight);
  return p;
}
}  // namespace

TEST_CASE("max-min rates: a shared link is split, a flow held elsewhere leaves the rest",
          "[max_min]") {
  // Link 0 (10) carries A and B; link 1 (4) carries B and C. B and C get 2 on link 1, A takes
  // what B leaves on link 0: 8.
  const std::vector<double> r = max_min_rates({on({0}), on({0, 1}), on({1})}, {10, 4});
  CHECK(r[0] == Approx(8));
  CHECK(r[1] == Approx(2));
  CHECK(r[2] == Approx(2));
  // Weights: a flow that costs 2 units per unit of rate gets half of what the other takes.
  const std::vector<double> w = max_min_rates({on({0}, 2.0), on({0})}, {9});
  CHECK(w[0] == Approx(3));
  CHECK(w[1] == Approx(3));
  CHECK(max_min_rates({FlowPath{}}, {1})[0] == 0);
}

TEST_CASE("fluid completion: flows are re-shared as others finish", "[max_min]") {
  // Two flows of 10 and 30 bits on one link of 10 b/s: both at 5 until the first ends at 2 s,
  // then the second alone at 10: 20 bits left, done at 4 s.
  const std::vector<double> t = fluid_completion_times({on({0}), on({0})}, {10, 30}, {10});
  CHECK(t[0] == Approx(2));
  CHECK(t[1] == Approx(4));
}
