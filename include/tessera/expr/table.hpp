#pragma once
/// Tabulated data (the case's `data` section): values on a rectilinear grid over some of the
/// coordinates, called in expressions as a function of them, e.g. kappa(x, y).
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/types.h>

namespace tessera::expr {

enum class Interpolation {
  linear,   ///< multilinear; first derivatives along each axis (piecewise constant)
  nearest,  ///< the value of the nearest grid point; no derivatives
};

class Table {
 public:
  /// `axes`: the coordinate name of each argument, in call order; `grid`: each axis's values,
  /// strictly increasing, at least 2; `values`: one per grid point, the first axis fastest
  /// (the layout of an HDF5 array shaped [n_last, ..., n_first]). Throws "<name>: ..." when
  /// the sizes or the axes do not fit.
  Table(std::string name, std::vector<std::string> axes, std::vector<std::vector<double>> grid,
        std::vector<double> values, Interpolation interpolation);

  const std::string& name() const { return name_; }
  const std::vector<std::string>& axes() const { return axes_; }
  const std::vector<double>& axis(int k) const { return grid_[static_cast<std::size_t>(k)]; }
  Interpolation interpolation() const { return interpolation_; }

  /// The interpolant at the points args[k] ([n] or 0-d, one per axis), differentiated once
  /// along each axis in `wrt` (distinct axes; linear interpolation only). Gradients flow to the
  /// arguments. With `check_range`, a point outside the grid (beyond a rounding tolerance)
  /// throws "<key>: <name>(...) is asked at <axis> = <v>, outside its grid [lo, hi] ..."; the
  /// check reads a flag from the device, so callers skip it where the grid is known to cover
  /// the points.
  torch::Tensor evaluate(const std::vector<torch::Tensor>& args, const std::vector<int>& wrt,
                         const std::string& key, bool check_range = true) const;

 private:
  struct OnDevice {
    std::vector<torch::Tensor> grid;
    torch::Tensor values;
  };
  const OnDevice& on(const torch::TensorOptions& options) const;

  std::string name_;
  std::vector<std::string> axes_;
  std::vector<std::vector<double>> grid_;
  std::vector<double> values_;
  Interpolation interpolation_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, OnDevice> copies_;  // by dtype and device
};

}  // namespace tessera::expr
