#include "tessera/train/strong_wolfe.hpp"

#include <algorithm>
#include <cmath>

namespace tessera::train {
namespace {

/// The minimiser of the cubic through (a.t, a.value, a.slope) and (b.t, b.value, b.slope),
/// kept inside [lo, hi]; the interval's midpoint when the cubic has no minimiser.
double cubic_minimiser(const LineSample& a, const LineSample& b, double lo, double hi) {
  const double d1 = a.slope + b.slope - 3 * (a.value - b.value) / (a.t - b.t);
  const double square = d1 * d1 - a.slope * b.slope;
  if (square < 0 || !std::isfinite(square)) return (lo + hi) / 2;
  const double d2 = std::copysign(std::sqrt(square), b.t - a.t);
  const double t = b.t - (b.t - a.t) * (b.slope + d2 - d1) / (b.slope - a.slope + 2 * d2);
  if (!std::isfinite(t)) return (lo + hi) / 2;
  return std::clamp(t, lo, hi);
}

}  // namespace

LineSearchResult strong_wolfe(const std::function<LineSample(double)>& evaluate,
                              const LineSample& start, double t0,
                              const StrongWolfeOptions& options) {
  LineSearchResult result;
  result.accepted = start;
  const double c1 = options.sufficient_decrease, c2 = options.curvature;
  const auto sufficient = [&](const LineSample& s) {
    return s.value <= start.value + c1 * s.t * start.slope;
  };
  const auto curvature = [&](const LineSample& s) {
    return std::abs(s.slope) <= -c2 * start.slope;
  };
  const auto sample = [&](double t) {
    ++result.evaluations;
    return evaluate(t);
  };

  // Bracketing: grow the step until it overshoots the decrease or the slope turns.
  LineSample previous = start, lo = start, hi = start;
  double t = t0;
  bool bracketed = false;
  while (result.evaluations < options.max_evaluations) {
    const LineSample trial = sample(t);
    if (!std::isfinite(trial.value) || !sufficient(trial) ||
        (result.evaluations > 1 && trial.value >= previous.value)) {
      lo = previous, hi = trial, bracketed = true;
      break;
    }
    if (curvature(trial)) {
      result.accepted = trial, result.wolfe = true;
      return result;
    }
    if (trial.slope >= 0) {
      lo = trial, hi = previous, bracketed = true;
      break;
    }
    // Extrapolate: at least 1.1x, at most 10x the current step.
    const double next = cubic_minimiser(previous, trial, t * 1.1, t * 10);
    previous = trial;
    result.accepted = trial;  // sufficient decrease holds here
    t = next;
  }
  if (!bracketed) return result;

  // Zoom: lo always satisfies sufficient decrease and is the lowest point seen so far.
  if (lo.t != start.t) result.accepted = lo;
  while (result.evaluations < options.max_evaluations &&
         std::abs(hi.t - lo.t) > options.tolerance_change) {
    const double left = std::min(lo.t, hi.t), right = std::max(lo.t, hi.t);
    const double margin = 0.1 * (right - left);
    // A non-finite end has no usable slope: bisect towards lo.
    const double trial_t = std::isfinite(hi.value) && std::isfinite(hi.slope)
                               ? cubic_minimiser(lo, hi, left + margin, right - margin)
                               : (lo.t + hi.t) / 2;
    const LineSample trial = sample(trial_t);
    if (!std::isfinite(trial.value) || !sufficient(trial) || trial.value >= lo.value) {
      hi = trial;
      continue;
    }
    if (curvature(trial)) {
      result.accepted = trial, result.wolfe = true;
      return result;
    }
    if (trial.slope * (hi.t - lo.t) >= 0) hi = lo;
    lo = trial;
    result.accepted = lo;
  }
  return result;
}

}  // namespace tessera::train
