#pragma once
/// A line search that satisfies the strong Wolfe conditions (Nocedal & Wright, "Numerical
/// Optimization", algorithms 3.5 and 3.6, with cubic interpolation in the zoom), on a function of
/// the step length given as a callback. In double precision whatever the parameters' dtype.
#include <functional>

namespace tessera::train {

/// The function and its slope along the search direction at step length t.
struct LineSample {
  double t = 0;
  double value = 0;
  double slope = 0;
};

struct StrongWolfeOptions {
  double sufficient_decrease = 1e-4;  ///< c1
  double curvature = 0.9;             ///< c2
  int max_evaluations = 25;
  /// The search gives up once the bracket is narrower than this (in step length).
  double tolerance_change = 1e-14;
};

struct LineSearchResult {
  LineSample accepted;  ///< the step taken (t = 0: no point lower than the start was found)
  int evaluations = 0;
  bool wolfe = false;  ///< whether `accepted` satisfies both conditions
};

/// Searches from `start` (t = 0; its slope must be negative) with first trial step `t0`.
/// `evaluate(t)` computes the function at t; the last call need not be at the accepted step.
LineSearchResult strong_wolfe(const std::function<LineSample(double)>& evaluate,
                              const LineSample& start, double t0,
                              const StrongWolfeOptions& options = {});

}  // namespace tessera::train
