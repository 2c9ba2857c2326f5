#include "validate/calibration/fitter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlopt.hpp>
#include <sstream>

namespace fabtwin::calibration {
namespace {

// Remembers every point evaluated, so that the analysis and the fit never ask twice.
class CachedModel {
 public:
  explicit CachedModel(const Problem& p) : problem_(p) {}

  std::vector<Eigen::VectorXd> at(const std::vector<Eigen::VectorXd>& points) {
    std::vector<Eigen::VectorXd> missing;
    for (const Eigen::VectorXd& x : points) {
      if (!cache_.count(key(x)) &&
          std::none_of(missing.begin(), missing.end(), [&](const auto& m) { return m == x; })) {
        missing.push_back(x);
      }
    }
    if (!missing.empty()) {
      const std::vector<Eigen::VectorXd> r = problem_.evaluate(missing);
      for (size_t i = 0; i < missing.size(); ++i) cache_[key(missing[i])] = r[i];
      evaluations_ += static_cast<int>(missing.size());
    }
    std::vector<Eigen::VectorXd> out;
    for (const Eigen::VectorXd& x : points) out.push_back(cache_.at(key(x)));
    return out;
  }
  Eigen::VectorXd at(const Eigen::VectorXd& x) { return at(std::vector<Eigen::VectorXd>{x})[0]; }
  int evaluations() const { return evaluations_; }

 private:
  static std::vector<double> key(const Eigen::VectorXd& x) {
    return std::vector<double>(x.data(), x.data() + x.size());
  }
  const Problem& problem_;
  std::map<std::vector<double>, Eigen::VectorXd> cache_;
  int evaluations_ = 0;
};

// The finite-difference Jacobian of the weighted residuals over the `free` coordinates, one
// batch of points; steps go inwards at the upper bound.
Eigen::MatrixXd jacobian(CachedModel& model, const Problem& problem, const Eigen::VectorXd& x,
                         const Eigen::VectorXd& rx, const std::vector<int>& free, double step) {
  std::vector<Eigen::VectorXd> points;
  std::vector<double> steps;
  for (const int j : free) {
    Eigen::VectorXd y = x;
    const double h = x[j] + step <= 1 ? step : -step;
    y[j] += h;
    points.push_back(y);
    steps.push_back(h);
  }
  const std::vector<Eigen::VectorXd> r = model.at(points);
  const Eigen::VectorXd w = problem.weights.cwiseSqrt();
  Eigen::MatrixXd J(rx.size(), static_cast<Eigen::Index>(free.size()));
  for (size_t k = 0; k < free.size(); ++k) {
    J.col(static_cast<Eigen::Index>(k)) = w.cwiseProduct(r[k] - rx) / steps[k];
  }
  return J;
}

std::string join(const std::vector<std::string>& names, const std::vector<int>& which) {
  std::string out;
  for (size_t i = 0; i < which.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == which.size() ? " and " : ", ") + names[which[i]];
  }
  return out;
}

struct Stage {
  Eigen::VectorXd x;
  double f = 0;
  bool converged = false;
  bool stalled = false;
  Eigen::MatrixXd J;  // at x, where computed
};

Stage levenberg_marquardt(CachedModel& model, const Problem& problem, Eigen::VectorXd x,
                          const std::vector<int>& free, const FitOptions& o, int budget,
                          std::vector<std::string>& notes) {
  Stage s;
  Eigen::VectorXd r = model.at(x);
  double f = objective(problem, r);
  double lambda = 1e-3;
  const int start = model.evaluations();
  const Eigen::VectorXd w = problem.weights.cwiseSqrt();
  Eigen::MatrixXd J = jacobian(model, problem, x, r, free, o.step);
  int rejected = 0;
  while (model.evaluations() - start < budget) {
    const Eigen::MatrixXd A = J.transpose() * J;
    const Eigen::VectorXd g = J.transpose() * w.cwiseProduct(r);
    Eigen::MatrixXd D = A.diagonal().cwiseMax(1e-12).asDiagonal();
    const Eigen::VectorXd delta = (A + lambda * D).ldlt().solve(-g);
    Eigen::VectorXd y = x;
    for (size_t k = 0; k < free.size(); ++k) {
      y[free[k]] = std::clamp(x[free[k]] + delta[static_cast<Eigen::Index>(k)], 0.0, 1.0);
    }
    const double moved = (y - x).cwiseAbs().maxCoeff();
    if (moved < 1e-6) {
      if (g.isZero() && f > 0) {
        s.stalled = true;
        notes.push_back(
            "least squares saw no slope: the model does not change over a "
            "finite-difference step here (it moves in steps)");
      } else {
        s.converged = true;
      }
      break;
    }
    const Eigen::VectorXd ry = model.at(y);
    const double fy = objective(problem, ry);
    if (fy < f) {
      const double gain = (f - fy) / std::max(f, 1e-300);
      x = y;
      r = ry;
      f = fy;
      lambda = std::max(lambda / 3, 1e-9);
      rejected = 0;
      if (gain < o.tolerance || moved < 1e-4) {
        s.converged = true;
        break;
      }
      J = jacobian(model, problem, x, r, free, o.step);
    } else {
      lambda *= 4;
      if (++rejected >= 8) {
        s.stalled = true;
        notes.push_back(
            "least squares stalled: 8 steps in a row did not lower the objective "
            "(the model is not smooth at this scale)");
        break;
      }
    }
  }
  s.x = x;
  s.f = f;
  s.J = J;
  return s;
}

Stage bobyqa(CachedModel& model, const Problem& problem, Eigen::VectorXd x,
             const std::vector<int>& free, const FitOptions& o, int budget,
             std::vector<std::string>& notes) {
  const unsigned n = static_cast<unsigned>(free.size());
  // BOBYQA interpolates a quadratic and needs two coordinates; one is searched by COBYLA.
  nlopt::opt opt(n >= 2 ? nlopt::LN_BOBYQA : nlopt::LN_COBYLA, n);
  opt.set_lower_bounds(std::vector<double>(n, 0.0));
  opt.set_upper_bounds(std::vector<double>(n, 1.0));
  opt.set_maxeval(std::max(budget, 2 * static_cast<int>(n) + 2));
  opt.set_ftol_rel(o.tolerance);
  opt.set_xtol_abs(1e-4);
  opt.set_initial_step(0.1);
  struct Context {
    CachedModel& model;
    const Problem& problem;
    Eigen::VectorXd x;
    const std::vector<int>& free;
  } context{model, problem, x, free};
  opt.set_min_objective(
      [](unsigned, const double* v, double*, void* data) {
        auto& c = *static_cast<Context*>(data);
        Eigen::VectorXd y = c.x;
        for (size_t k = 0; k < c.free.size(); ++k) y[c.free[k]] = std::clamp(v[k], 0.0, 1.0);
        return objective(c.problem, c.model.at(y));
      },
      &context);
  std::vector<double> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = x[free[k]];
  double f = 0;
  Stage s;
  try {
    const nlopt::result result = opt.optimize(v, f);
    s.converged =
        result == nlopt::FTOL_REACHED || result == nlopt::XTOL_REACHED || result == nlopt::SUCCESS;
    if (result == nlopt::MAXEVAL_REACHED) notes.push_back("bobyqa used its evaluation budget");
  } catch (const nlopt::roundoff_limited&) {
    s.converged = true;  // as close as the objective's resolution allows
  } catch (const std::exception& e) {
    notes.push_back(std::string("bobyqa stopped: ") + e.what());
  }
  for (size_t k = 0; k < n; ++k) x[free[k]] = std::clamp(v[k], 0.0, 1.0);
  s.x = x;
  s.f = objective(problem, model.at(x));
  return s;
}

}  // namespace

double objective(const Problem& problem, const Eigen::VectorXd& residuals) {
  return problem.weights.dot(residuals.cwiseAbs2());
}

Identifiability analyse(const Problem& problem, const Eigen::VectorXd& start,
                        const std::vector<std::string>& names, const FitOptions& o) {
  CachedModel model(problem);
  const int p = problem.parameters;
  Identifiability id;
  id.status.assign(p, Identified::Yes);
  id.effect.assign(p, 0);
  id.reason.assign(p, "");
  std::vector<Eigen::VectorXd> ends;
  for (int j = 0; j < p; ++j) {
    for (const double end : {0.0, 1.0}) {
      Eigen::VectorXd y = start;
      y[j] = end;
      ends.push_back(y);
    }
  }
  ends.push_back(start);
  const std::vector<Eigen::VectorXd> r = model.at(ends);
  std::vector<int> left;
  for (int j = 0; j < p; ++j) {
    id.effect[j] = (r[2 * j + 1] - r[2 * j]).cwiseAbs().maxCoeff();
    if (id.effect[j] < o.min_effect) {
      id.status[j] = Identified::NoEffect;
      std::ostringstream s;
      s.precision(2);
      s << "moving it over its whole range changes no fitted metric by more than "
        << 100 * o.min_effect << " % (at most " << 100 * id.effect[j] << " %)";
      id.reason[j] = s.str();
    } else {
      left.push_back(j);
    }
  }
  // Collinearity is judged among the parameters that move the metrics where the fit starts: one
  // whose finite difference there is flat (a rate above another bottleneck) has no direction to
  // compare; it moved them over its range, so it stays free.
  if (left.size() >= 2) {
    const Eigen::MatrixXd J = jacobian(model, problem, start, r.back(), left, o.step);
    const Eigen::VectorXd norms = J.colwise().norm();
    const double largest = norms.maxCoeff();
    std::vector<int> sloped;
    for (size_t k = 0; k < left.size(); ++k) {
      if (norms[static_cast<Eigen::Index>(k)] > 1e-6 * largest) sloped.push_back(left[k]);
    }
    left = sloped;
  }
  while (left.size() >= 2) {
    Eigen::MatrixXd J = jacobian(model, problem, start, r.back(), left, o.step);
    Eigen::VectorXd norms = J.colwise().norm();
    for (Eigen::Index k = 0; k < J.cols(); ++k) {
      if (norms[k] > 0) J.col(k) /= norms[k];
    }
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(J, Eigen::ComputeThinV);
    const Eigen::VectorXd sv = svd.singularValues();
    if (sv[0] <= 0 || sv[sv.size() - 1] / sv[0] >= o.collinearity) break;
    const Eigen::VectorXd v = svd.matrixV().col(sv.size() - 1);
    std::vector<int> group;
    for (Eigen::Index k = 0; k < v.size(); ++k) {
      if (std::abs(v[k]) >= 0.3) group.push_back(left[static_cast<size_t>(k)]);
    }
    // The weakest member of the dependent group is dropped; the others stay.
    int weakest = group.front();
    for (const int j : group) {
      const auto k = std::find(left.begin(), left.end(), j) - left.begin();
      const auto kw = std::find(left.begin(), left.end(), weakest) - left.begin();
      if (norms[k] < norms[kw]) weakest = j;
    }
    std::vector<int> others;
    for (const int j : group) {
      if (j != weakest) others.push_back(j);
    }
    if (others.empty()) {  // the direction is the weakest alone: name its closest partner
      Eigen::Index best = -1;
      for (Eigen::Index k = 0; k < v.size(); ++k) {
        if (left[static_cast<size_t>(k)] != weakest &&
            (best < 0 || std::abs(v[k]) > std::abs(v[best])))
          best = k;
      }
      others.push_back(left[static_cast<size_t>(best)]);
    }
    id.status[weakest] = Identified::NotSeparately;
    id.reason[weakest] = "it moves the fitted metrics as " + join(names, others) +
                         " does: the measurements cannot tell them apart (it is kept at its "
                         "starting value, the other fitted)";
    left.erase(std::find(left.begin(), left.end(), weakest));
  }
  return id;
}

FitResult fit(const Problem& problem, const Eigen::VectorXd& start, const std::vector<bool>& free,
              const FitOptions& o) {
  CachedModel model(problem);
  FitResult out;
  std::vector<int> which;
  for (int j = 0; j < problem.parameters; ++j) {
    if (free[j]) which.push_back(j);
  }
  out.u = start;
  out.objective_start = out.objective = objective(problem, model.at(start));
  out.standard_error = Eigen::VectorXd::Zero(problem.parameters);
  if (which.empty()) {
    out.method = "none";
    out.converged = true;
    out.notes.push_back("no parameter the measurements identify: nothing fitted");
    return out;
  }
  Stage s;
  if (o.method == "bobyqa") {
    s = bobyqa(model, problem, start, which, o, o.max_evaluations, out.notes);
    out.method = "bobyqa";
  } else {
    s = levenberg_marquardt(model, problem, start, which, o, o.max_evaluations, out.notes);
    out.method = "least_squares";
    if (o.method == "auto" && s.stalled) {
      const int left = o.max_evaluations - model.evaluations();
      if (left > 0) {
        const Stage b = bobyqa(model, problem, s.x, which, o, left, out.notes);
        out.method = "least_squares+bobyqa";
        if (b.f < s.f) s = b;
        s.J.resize(0, 0);
      }
    }
  }
  out.u = s.x;
  out.objective = s.f;
  out.converged = s.converged;
  out.evaluations = model.evaluations();
  // Standard errors from the Jacobian at the result: s^2 (J'J)^-1, s^2 the residual variance,
  // over the columns that have a slope there; one without (a rate above another bottleneck)
  // has an unbounded error.
  const Eigen::VectorXd r = model.at(s.x);
  const Eigen::MatrixXd J = s.J.size() > 0 ? s.J : jacobian(model, problem, s.x, r, which, o.step);
  const Eigen::VectorXd norms = J.colwise().norm();
  std::vector<Eigen::Index> sloped;
  for (Eigen::Index k = 0; k < J.cols(); ++k) {
    if (norms[k] > 1e-9 * norms.maxCoeff() && norms[k] > 0) {
      sloped.push_back(k);
    } else {
      out.standard_error[which[static_cast<size_t>(k)]] = std::numeric_limits<double>::infinity();
    }
  }
  const Eigen::Index m = r.size(), n = static_cast<Eigen::Index>(sloped.size());
  if (n > 0 && m > n) {
    const double variance = s.f / static_cast<double>(m - n);
    const Eigen::MatrixXd A = J(Eigen::all, sloped).transpose() * J(Eigen::all, sloped);
    Eigen::FullPivLU<Eigen::MatrixXd> lu(A);
    if (lu.isInvertible()) {
      const Eigen::MatrixXd cov = variance * lu.inverse();
      for (Eigen::Index k = 0; k < n; ++k) {
        out.standard_error[which[static_cast<size_t>(sloped[static_cast<size_t>(k)])]] =
            std::sqrt(std::max(0.0, cov(k, k)));
      }
    }
  }
  return out;
}

}  // namespace fabtwin::calibration
