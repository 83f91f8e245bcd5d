#include "tessera/expr/table.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tessera/core/error.hpp"
#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::expr {

namespace {

// Points this close to the grid's ends count as inside: grids and domains written with rounded
// decimals, and arguments computed in float32 (kappa(x, 1 - y)), then still fit.
double end_tolerance(double lo, double hi, torch::ScalarType dtype) {
  const double rounding = dtype == torch::kFloat64 ? 2.2e-16 : 1.2e-7;
  const double scale = std::max({hi - lo, std::abs(lo), std::abs(hi)});
  return std::max(1e-9 * (hi - lo), 8 * rounding * scale);
}

}  // namespace

Table::Table(std::string name, std::vector<std::string> axes, std::vector<std::vector<double>> grid,
             std::vector<double> values, Interpolation interpolation)
    : name_(std::move(name)),
      axes_(std::move(axes)),
      grid_(std::move(grid)),
      values_(std::move(values)),
      interpolation_(interpolation) {
  TESSERA_CHECK(!axes_.empty() && axes_.size() == grid_.size(),
                name_ << ": tabulated data needs one grid axis per argument");
  std::size_t points = 1;
  for (std::size_t k = 0; k < grid_.size(); ++k) {
    const auto& axis = grid_[k];
    TESSERA_CHECK(axis.size() >= 2,
                  name_ << ": the grid along " << axes_[k] << " needs at least 2 points");
    for (std::size_t i = 1; i < axis.size(); ++i)
      TESSERA_CHECK(axis[i] > axis[i - 1], name_ << ": the grid along " << axes_[k]
                                                 << " must increase strictly (point " << i << " is "
                                                 << axis[i] << " after " << axis[i - 1] << ")");
    points *= axis.size();
  }
  TESSERA_CHECK(values_.size() == points,
                name_ << ": " << values_.size() << " values for a grid of " << points << " points");
}

const Table::OnDevice& Table::on(const torch::TensorOptions& options) const {
  std::ostringstream id;
  id << options.dtype() << '@' << options.device();
  std::lock_guard<std::mutex> lock(mutex_);
  const auto found = copies_.find(id.str());
  if (found != copies_.end()) return found->second;
  // Complete before it is kept: a copy that fails halfway (out of device memory) leaves nothing.
  OnDevice copy;
  auto host = torch::TensorOptions().dtype(torch::kFloat64);
  for (const auto& axis : grid_) copy.grid.push_back(torch::tensor(axis, host).to(options));
  copy.values = torch::tensor(values_, host).to(options);
  return copies_.emplace(id.str(), std::move(copy)).first->second;
}

torch::Tensor Table::evaluate(const std::vector<torch::Tensor>& args, const std::vector<int>& wrt,
                              const std::string& key, bool check_range) const {
  TESSERA_CHECK(args.size() == axes_.size(),
                key << ": " << name_ << "() takes " << axes_.size() << " arguments");
  TESSERA_CHECK(interpolation_ == Interpolation::linear || wrt.empty(),
                key << ": " << name_ << " has no derivatives (nearest-neighbour data)");
  const auto options = args[0].options();
  const OnDevice& data = on(options);
  int64_t n = 1;
  bool all_constant = true;
  for (const auto& arg : args) {
    if (arg.dim() == 0) continue;
    all_constant = false;
    n = std::max<int64_t>(n, arg.size(0));
  }

  // Per axis: the cell each point falls in (lower index) and the two corner weights.
  std::vector<torch::Tensor> weight_low(args.size()), weight_high(args.size());
  int64_t stride = 1;
  torch::Tensor base = torch::zeros({n}, options.dtype(torch::kLong));
  for (std::size_t k = 0; k < args.size(); ++k) {
    const auto& axis = grid_[k];
    const double lo = axis.front(), hi = axis.back();
    const torch::Tensor a = args[k].expand({n});
    if (check_range) {
      const double slack = end_tolerance(lo, hi, a.scalar_type());
      const auto outside = torch::logical_or(torch::lt(a, lo - slack), torch::gt(a, hi + slack));
      if (core::read_bool(outside.any())) {
        const double at = core::read_double(a.masked_select(outside)[0]);
        TESSERA_FAIL(key << ": " << name_ << "(...) is asked at " << axes_[k] << " = " << at
                         << ", outside its grid [" << lo << ", " << hi
                         << "] (extend the data file's grid to cover the domain)");
      }
    }
    const auto& grid = data.grid[k];
    const int64_t cells = static_cast<int64_t>(axis.size()) - 1;
    torch::Tensor cell =
        (torch::searchsorted(grid, a.detach().contiguous(), /*out_int32=*/false, /*right=*/true) -
         1)
            .clamp(0, cells - 1);
    const torch::Tensor x0 = grid.index_select(0, cell);
    const torch::Tensor width = grid.index_select(0, cell + 1) - x0;
    // Unchecked points are the domain's, inside the grid; one outside it (tessera evaluate
    // --points beyond the domain) takes the grid's edge value rather than an extrapolation.
    torch::Tensor t = (a - x0) / width;
    if (!check_range) t = t.clamp(0.0, 1.0);
    const bool differentiated = std::count(wrt.begin(), wrt.end(), static_cast<int>(k)) > 0;
    if (interpolation_ == Interpolation::nearest) {
      cell = cell + (t >= 0.5).to(torch::kLong);
      weight_low[k] = torch::ones_like(t);
      weight_high[k] = torch::zeros_like(t);
    } else if (differentiated) {
      weight_low[k] = -1.0 / width;
      weight_high[k] = 1.0 / width;
    } else {
      weight_low[k] = 1.0 - t;
      weight_high[k] = t;
    }
    base = base + cell * stride;
    stride *= static_cast<int64_t>(axis.size());
  }

  // Sum over the 2^d corners of each point's cell.
  torch::Tensor result = torch::zeros({n}, options);
  const int corners = interpolation_ == Interpolation::nearest ? 1 : 1 << args.size();
  for (int corner = 0; corner < corners; ++corner) {
    torch::Tensor index = base;
    torch::Tensor weight = torch::ones({n}, options);
    int64_t axis_stride = 1;
    for (std::size_t k = 0; k < args.size(); ++k) {
      const bool high = (corner >> k) & 1;
      if (high) index = index + axis_stride;
      weight = weight * (high ? weight_high[k] : weight_low[k]);
      axis_stride *= static_cast<int64_t>(grid_[k].size());
    }
    result = result + weight * data.values.index_select(0, index);
  }
  return all_constant ? result.reshape({}) : result;
}

}  // namespace tessera::expr
