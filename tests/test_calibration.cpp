// Calibration's parts alone, without the simulator: the closed-form alpha-beta fit, the fitters
// on analytic models whose answer is known (least squares solves a linear model in one step;
// BOBYQA finds the minimum of a model that is flat between steps), the identifiability analysis
// (a parameter with no effect, two that move the metrics alike), parameters read from their
// declarations with ranges and units, and slices. The whole command, with the simulator in the
// loop, is tested by tests/check_calibration_recovery.sh.
#include <catch2/catch.hpp>
#include <cmath>

#include "models/fabric/fabric_spec.h"
#include "validate/calibration/alpha_beta.h"
#include "validate/calibration/fitter.h"
#include "validate/calibration/parameter_space.h"
#include "validate/calibration/slice.h"

using namespace fabtwin;
using namespace fabtwin::calibration;

namespace {

// T(S) = a + S/b over sizes 1 KiB .. 1 GiB; residuals ln(model/measured) against given a, b.
struct AlphaBetaModel {
  std::vector<double> sizes;
  std::vector<double> measured;
  AlphaBetaModel(double a, double b) {
    for (double s = 1024; s <= 1024.0 * 1024 * 1024; s *= 4) {
      sizes.push_back(s);
      measured.push_back(a + s / b);
    }
  }
};

}  // namespace

TEST_CASE("alpha-beta: the closed form recovers latency and bandwidth exactly", "[calibration]") {
  const AlphaBetaModel m(25e-6, 40e9);
  const std::optional<AlphaBeta> ab = fit_alpha_beta(m.sizes, m.measured);
  REQUIRE(ab);
  CHECK(ab->alpha == Approx(25e-6).epsilon(1e-9));
  CHECK(ab->beta == Approx(40e9).epsilon(1e-9));
  CHECK(ab->time(1 << 20) == Approx(25e-6 + (1 << 20) / 40e9).epsilon(1e-12));
  // One size gives no model; times that do not grow with the size give a latency alone.
  CHECK_FALSE(fit_alpha_beta({1024, 1024}, {1.0, 1.0}));
  const std::optional<AlphaBeta> flat = fit_alpha_beta({1024, 2048}, {2.0, 1.0});
  REQUIRE(flat);
  CHECK(std::isinf(flat->beta));
  CHECK(flat->alpha == Approx(1.2));  // sum(1/T) / sum(1/T^2) = 1.5 / 1.25: least relative squares
  CHECK(flat->time(1 << 30) == flat->alpha);
}

TEST_CASE("fitter: least squares recovers a linear model's parameters", "[calibration]") {
  // T(S) = a + S/b with a in [1 us, 100 us] and 1/b in [1/100e9, 1/1e9] (log coordinates).
  const AlphaBetaModel m(20e-6, 25e9);
  const auto a_of = [](double u) { return 1e-6 * std::pow(100.0, u); };
  const auto inv_b_of = [](double u) { return 1 / (1e9 * std::pow(100.0, u)); };
  Problem p;
  p.parameters = 2;
  p.weights = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(m.sizes.size()), 1.0);
  int batches = 0;
  p.evaluate = [&](const std::vector<Eigen::VectorXd>& points) {
    ++batches;
    std::vector<Eigen::VectorXd> out;
    for (const Eigen::VectorXd& u : points) {
      Eigen::VectorXd r(static_cast<Eigen::Index>(m.sizes.size()));
      for (size_t i = 0; i < m.sizes.size(); ++i) {
        r[static_cast<Eigen::Index>(i)] =
            std::log((a_of(u[0]) + m.sizes[i] * inv_b_of(u[1])) / m.measured[i]);
      }
      out.push_back(r);
    }
    return out;
  };
  Eigen::VectorXd start(2);
  start << 0.2, 0.2;
  FitOptions o;
  o.method = "least_squares";
  o.tolerance = 1e-10;
  const FitResult f = fit(p, start, {true, true}, o);
  CHECK(f.method == "least_squares");
  CHECK(f.converged);
  CHECK(a_of(f.u[0]) == Approx(20e-6).epsilon(1e-3));
  CHECK(1 / inv_b_of(f.u[1]) == Approx(25e9).epsilon(1e-3));
  CHECK(f.objective < 1e-8);
  CHECK(f.objective < f.objective_start);
  // The Jacobian is evaluated as one batch of points (they could run in parallel).
  CHECK(batches < f.evaluations);

  SECTION("BOBYQA reaches the same answer without derivatives") {
    o.method = "bobyqa";
    o.max_evaluations = 400;
    const FitResult b = fit(p, start, {true, true}, o);
    CHECK(b.method == "bobyqa");
    CHECK(a_of(b.u[0]) == Approx(20e-6).epsilon(1e-2));
    CHECK(1 / inv_b_of(b.u[1]) == Approx(25e9).epsilon(1e-2));
  }
  SECTION("a parameter that is not free keeps its value") {
    const FitResult g = fit(p, start, {true, false}, o);
    CHECK(g.u[1] == start[1]);
    CHECK(g.standard_error[1] == 0);
  }
}

TEST_CASE("fitter: auto falls back to BOBYQA on a model flat between steps", "[calibration]") {
  // The model moves in steps of 0.01 of the coordinate (a discretised simulator): finite
  // differences of 0.002 see zero slope almost everywhere and least squares stalls; BOBYQA, whose
  // first steps span many stairs, still descends.
  Problem p;
  p.parameters = 2;
  p.weights = Eigen::VectorXd::Ones(2);
  p.evaluate = [](const std::vector<Eigen::VectorXd>& points) {
    std::vector<Eigen::VectorXd> out;
    for (const Eigen::VectorXd& u : points) {
      Eigen::VectorXd r(2);
      r << std::floor(u[0] * 100) / 100 - 0.7, std::floor(u[1] * 100) / 100 - 0.35;
      out.push_back(r);
    }
    return out;
  };
  Eigen::VectorXd start(2);
  start << 0.1005, 0.1005;
  FitOptions o;
  o.step = 0.002;
  o.max_evaluations = 200;
  const FitResult f = fit(p, start, {true, true}, o);
  CHECK(f.method == "least_squares+bobyqa");
  CHECK_THAT(f.notes.front(), Catch::Contains("saw no slope"));
  CHECK(f.objective < 0.01 * f.objective_start);
}

TEST_CASE("identifiability: no effect, and two parameters that move the metrics alike",
          "[calibration]") {
  // r = ln(a * b * S / measured) for two sizes: a and b only act through their product, and c
  // acts on nothing.
  Problem p;
  p.parameters = 3;
  p.weights = Eigen::VectorXd::Ones(2);
  p.evaluate = [](const std::vector<Eigen::VectorXd>& points) {
    std::vector<Eigen::VectorXd> out;
    for (const Eigen::VectorXd& u : points) {
      const double a = 1 + u[0], b = 1 + 2 * u[1];
      Eigen::VectorXd r(2);
      r << std::log(a * b * 1 / 3.0), std::log(a * b * 2 / 6.0);
      out.push_back(r);
    }
    return out;
  };
  Eigen::VectorXd start = Eigen::VectorXd::Constant(3, 0.5);
  const Identifiability id = analyse(p, start, {"a", "b", "c"}, FitOptions{});
  CHECK(id.status[2] == Identified::NoEffect);
  CHECK(id.effect[2] == 0);
  CHECK_THAT(id.reason[2], Catch::Contains("changes no fitted metric"));
  // a's column is the weaker (its range moves the product less than b's): a is dropped.
  CHECK(id.status[0] == Identified::NotSeparately);
  CHECK_THAT(id.reason[0], Catch::Contains("as b does"));
  CHECK(id.status[1] == Identified::Yes);
}

TEST_CASE("fit parameters: declared type, unit, range and current value", "[calibration]") {
  const nlohmann::json scenario = nlohmann::json::parse(R"({
    "nccl": {"net_step_latency": "12us"},
    "traffic": [{"type": "collective", "op": "all_reduce", "iterations": 2}]})");
  const auto groups = all_param_groups();
  const FitParameter a = parse_fit_parameter("nccl.net_step_latency=2us:30us", scenario, groups);
  CHECK(a.type == ParamType::Time);
  CHECK(a.unit == "ps");
  CHECK(a.initial == 12e6);
  CHECK(a.lo == 2e6);
  CHECK(a.hi == 30e6);
  CHECK(a.logarithmic);
  CHECK(a.value(a.coordinate(12e6)) == Approx(12e6));
  CHECK(a.text(12345678.4) == "12.345678us");
  // No range: a quarter to four times the declared default (gpu.channel_rate is 320Gbps).
  const FitParameter b = parse_fit_parameter("gpu.channel_rate", scenario, groups);
  CHECK(b.initial == 320e9);
  CHECK(b.lo == 80e9);
  CHECK(b.hi == 1280e9);
  CHECK(b.scenario_value(190e9) == "190Gbps");
  // A generator's parameter, found through the selector its type satisfies.
  const FitParameter c = parse_fit_parameter("traffic[0].iterations=1:8", scenario, groups);
  CHECK(c.type == ParamType::Integer);
  CHECK(c.initial == 2);
  CHECK(c.scenario_value(3.4) == 3);

  // A quantity or a keyword, declared as text: the range gives the unit; "auto" starts mid-range.
  const FitParameter d =
      parse_fit_parameter("nccl.tree_net_step_latency=1us:100us", scenario, groups);
  CHECK(d.type == ParamType::Time);
  CHECK(d.initial_from_range);
  CHECK(d.initial == Approx(10e6));
  CHECK_THROWS_WITH(parse_fit_parameter("nccl.tree_net_step_latency", scenario, groups),
                    Catch::Contains("needs a range in its unit"));

  CHECK_THROWS_WITH(parse_fit_parameter("nccl.no_such=1:2", scenario, groups),
                    Catch::Contains("--fit nccl.no_such=1:2") &&
                        Catch::Contains("expected a declared parameter"));
  CHECK_THROWS_WITH(parse_fit_parameter("nccl.net_step_latency=30us:2us", scenario, groups),
                    Catch::Contains("0 <= LO < HI"));
  CHECK_THROWS_WITH(parse_fit_parameter("nccl.net_step_latency=1us:5us", scenario, groups),
                    Catch::Contains("the scenario's value 12us lies outside the range"));
  CHECK_THROWS_WITH(parse_fit_parameter("nccl.net_step_latency=2:30", scenario, groups),
                    Catch::Contains("expected a quantity with its unit"));
  CHECK_THROWS_WITH(parse_fit_parameter("gpu.gpudirect", scenario, groups),
                    Catch::Contains("numeric value"));
}

TEST_CASE("slices: conditions on size, op and case", "[calibration]") {
  std::vector<Case> cases(2);
  cases[0].label = "1node";
  cases[1].label = "2nodes";
  cases[1].nodes = 2;
  Observation o;
  o.case_index = 1;
  o.op = "all_reduce";
  o.size = 64.0 * 1024 * 1024;
  o.family = "time";
  CHECK(Slice::parse("size<=64MiB", "--fit-on").matches(o, cases));
  CHECK_FALSE(Slice::parse("size<64MiB", "--fit-on").matches(o, cases));
  CHECK(Slice::parse("size>1024,op=all_reduce,case=2nodes,nodes>=2", "--fit-on").matches(o, cases));
  CHECK_FALSE(Slice::parse("case!=2nodes", "--fit-on").matches(o, cases));
  CHECK(Slice::parse("family=time", "--predict").matches(o, cases));
  CHECK_THROWS_WITH(
      Slice::parse("bytes<=4", "--fit-on"),
      Catch::Contains("--fit-on bytes<=4") && Catch::Contains("expected an attribute"));
  CHECK_THROWS_WITH(Slice::parse("size<=lots", "--fit-on"),
                    Catch::Contains("expected a number or a size"));
  CHECK_THROWS_WITH(Slice::parse("op<all_reduce", "--fit-on"), Catch::Contains("expected = or !="));
  CHECK_THROWS_WITH(Slice::parse("size", "--fit-on"), Catch::Contains("ATTRIBUTE OP VALUE"));
}
