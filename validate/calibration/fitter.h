// Fitting parameters to measurements by least squares on relative errors: which parameters the
// measurements can identify, then Levenberg-Marquardt on finite differences (a model whose
// metrics move linearly with its parameters, as latencies with per-step overheads do, is solved
// in one step: the closed form) or NLopt's bounded derivative-free BOBYQA (for a model that is
// not smooth in its parameters). The model is a function from coordinates in [0, 1]^p to
// residuals; it is called with a batch of points at a time, so that they can be simulated in
// parallel. Nothing here knows the simulator.
#pragma once

#include <Eigen/Dense>
#include <functional>
#include <string>
#include <vector>

namespace fabtwin::calibration {

// Residuals at each point of a batch; every vector has the same length (one per measured
// metric). A residual is a relative error, ln(model / measured).
using Residuals = std::function<std::vector<Eigen::VectorXd>(const std::vector<Eigen::VectorXd>&)>;

struct Problem {
  int parameters = 0;
  Eigen::VectorXd weights;  // per residual: the objective is sum(weights * residual^2)
  Residuals evaluate;
};

struct FitOptions {
  std::string method = "auto";  // auto | least_squares | bobyqa
  int max_evaluations = 80;     // model evaluations (points) in the fit itself
  double tolerance = 1e-4;      // relative change of the objective that ends the fit
  double min_effect = 0.01;     // a parameter moving no metric by this much over its range
                                // cannot be fitted
  double collinearity = 0.05;   // smallest/largest singular value of the scaled Jacobian below
                                // which parameters are not separately identifiable
  double step = 0.02;           // finite-difference step in coordinates
};

enum class Identified { Yes, NoEffect, NotSeparately };

struct Identifiability {
  std::vector<Identified> status;
  std::vector<double> effect;       // largest change of a residual between the range's ends
  std::vector<std::string> reason;  // for the parameters not identified
};

// Moves each parameter over its whole range (the others at `start`) and looks at the scaled
// Jacobian at `start`: a parameter that changes no residual by `min_effect` has no effect; of
// parameters whose columns are nearly dependent, all but the strongest are not separately
// identifiable. `names` name the parameters in the reasons.
Identifiability analyse(const Problem& problem, const Eigen::VectorXd& start,
                        const std::vector<std::string>& names, const FitOptions& options);

struct FitResult {
  Eigen::VectorXd u;  // the fitted coordinates (fixed ones as they started)
  double objective_start = 0, objective = 0;
  int evaluations = 0;  // points evaluated by the fit (not the analysis)
  std::string method;   // what ran: "least_squares", "bobyqa", or both
  bool converged = false;
  // Of each free coordinate: 0 for fixed ones, infinite for one the residuals have no slope in
  // at the result.
  Eigen::VectorXd standard_error;
  std::vector<std::string> notes;
};

// Fits the parameters marked in `free` from `start`.
FitResult fit(const Problem& problem, const Eigen::VectorXd& start, const std::vector<bool>& free,
              const FitOptions& options);

double objective(const Problem& problem, const Eigen::VectorXd& residuals);

}  // namespace fabtwin::calibration
