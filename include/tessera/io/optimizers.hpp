#pragma once
/// The optimizers a training stage may name, one row each: its spelling, the stage keys it takes
/// and its defaults. The case reader, `tessera check`, the memory estimate and the training plan
/// read these rows, and the trainer runs a stage by its optimizer's name (a runner per row,
/// train/stage_runner.hpp). Adding an optimizer that takes existing keys is a row here and its
/// runner there.
#include <string>
#include <vector>

namespace tessera::io {

struct OptimizerSpec {
  const char* name;     ///< as the case file spells it
  const char* article;  ///< "a" or "an", as the name is read aloud
  /// Every key a stage of this optimizer takes ("optimizer" and "iterations" included).
  std::vector<std::string> keys;
  double lr;         ///< default learning rate (quasi-Newton: the first step length)
  double tolerance;  ///< default gradient tolerance (stop when the largest entry is below)
  /// First order: takes a schedule (decay, warm-up), clipping and the divergence guard, and
  /// trains with causal weights.
  bool first_order;
  /// Trains in float64 unless the stage says otherwise.
  bool float64;
  /// Keeps a dense inverse Hessian: a size limit per subdomain (the limited-memory methods,
  /// which take `history`, have none).
  bool dense_hessian;

  bool takes(const std::string& key) const;
};

/// Every row, in the order the docs list them.
const std::vector<OptimizerSpec>& optimizers();
/// The row spelled `name`; null when none is.
const OptimizerSpec* find_optimizer(const std::string& name);
/// The names of every row.
std::vector<std::string> optimizer_names();

}  // namespace tessera::io
