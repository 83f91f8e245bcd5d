#include "tessera/io/optimizers.hpp"

#include <algorithm>

namespace tessera::io {

bool OptimizerSpec::takes(const std::string& key) const {
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

const std::vector<OptimizerSpec>& optimizers() {
  // The quasi-Newton methods run in float64: the finish resolves errors far below float32's
  // resolution of the loss.
  static const std::vector<OptimizerSpec> rows = {
      {"adam",
       "an",
       {"optimizer", "iterations", "lr", "decay", "warmup", "clip", "points", "dtype", "precision"},
       /*lr=*/1e-3,
       /*tolerance=*/0,
       /*first_order=*/true,
       /*float64=*/false,
       /*dense_hessian=*/false},
      {"lbfgs",
       "an",
       {"optimizer", "iterations", "lr", "history", "scaling", "tolerance", "points", "dtype",
        "precision", "hessian"},
       /*lr=*/1.0,
       /*tolerance=*/1e-12,
       /*first_order=*/false,
       /*float64=*/true,
       /*dense_hessian=*/false},
      {"bfgs",
       "a",
       {"optimizer", "iterations", "lr", "tolerance", "points", "dtype", "precision", "hessian"},
       /*lr=*/1.0,
       /*tolerance=*/1e-12,
       /*first_order=*/false,
       /*float64=*/true,
       /*dense_hessian=*/true},
      {"ssbroyden",
       "an",
       {"optimizer", "iterations", "lr", "tolerance", "points", "dtype", "precision", "hessian"},
       /*lr=*/1.0,
       /*tolerance=*/1e-12,
       /*first_order=*/false,
       /*float64=*/true,
       /*dense_hessian=*/true},
  };
  return rows;
}

const OptimizerSpec* find_optimizer(const std::string& name) {
  const auto& rows = optimizers();
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const OptimizerSpec& row) { return name == row.name; });
  return it == rows.end() ? nullptr : &*it;
}

std::vector<std::string> optimizer_names() {
  std::vector<std::string> names;
  for (const auto& row : optimizers()) names.push_back(row.name);
  return names;
}

}  // namespace tessera::io
