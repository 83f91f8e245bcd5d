#pragma once
/// The finite-basis network (FBPINN; Moseley, Markham & Nissen-Meyer 2023), with levels
/// (Dolean, Heinlein, Mishra & Moseley 2024): the box is cut into a grid of cells per level,
/// each cell widened by the overlap becomes a subdomain with its own small MLP on its own
/// normalised coordinates, and the solution is
///
///   u(x) = sum over levels of sum_j w_j(x) N_j((x - c_j) / r_j),
///
/// with windows w_j that form a partition of unity on every level: w_j = v_j / sum_k v_k, and
/// v_j the product over the cut axes of ((1 + cos(pi t)) / 2)^2, t = (x - c_j) / r_j, inside the
/// subdomain's support (zero outside). The window is twice continuously differentiable, so
/// second-order equations see no jump at the support's edge. The solution is continuous by
/// construction: there are no interface terms.
///
/// All subdomain networks share one architecture, so their parameters are stacked ([J, out, in]
/// per layer) and evaluated together: level by level, the points of every subdomain's support
/// are gathered into one padded batch (the cells of a level are alike, so the padding is small)
/// and each layer is one batched product. Each point only meets the networks whose support
/// holds it.
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "tessera/nn/mlp.hpp"
#include "tessera/nn/network.hpp"

namespace tessera::nn {

/// One level's grid: the cell edges along every input axis (ascending, at least two each; an
/// axis with two edges is not cut and gets no window factor).
struct WindowGrid {
  std::vector<std::vector<double>> edges;

  /// Cells along every axis.
  std::vector<int64_t> pieces() const;
  int64_t cells() const;
};

struct FbpinnOptions {
  int64_t inputs = 1;
  int64_t outputs = 1;
  std::vector<int64_t> hidden{16, 16};
  Activation activation = Activation::tanh;
  bool xavier_uniform = false;
  /// The levels, each a grid over the same box. Subdomains are numbered level by level, and
  /// inside a level row-major over the cells with the first axis fastest.
  std::vector<WindowGrid> levels;
  /// How far each cell's support reaches into its neighbours along a cut axis, as a fraction of
  /// the cell's width: the support of cell [a, b] is [a - overlap (b - a) / 2, b + overlap
  /// (b - a) / 2]. In (0, 1].
  double overlap = 0.5;
  /// Subdomain j's hidden layers are initialised from (seed, j, "init"); every output layer
  /// starts at zero, so u starts at 0.
  uint64_t seed = 1234;
};

/// How one level's subdomains meet a set of points. It depends on the coordinates only, so the
/// network keeps the plans of the point sets it saw last and reuses them while the points stay
/// (training redraws them only every so many iterations).
struct LevelPlan {
  /// The (point, subdomain) pairs whose support holds the point, sorted by point, then
  /// subdomain [P]; subdomains are numbered over all levels.
  torch::Tensor point, subdomain;
  /// Each pair's row in the level's padded batch [subdomains of the level * rows]: its
  /// subdomain's block of `rows` rows, in the order of its points. Distinct for all pairs.
  torch::Tensor row;
  int64_t rows = 0;
  /// The pairs in subdomain order, each subdomain's by point [P] (how the CPU node takes them).
  torch::Tensor by_subdomain;
  /// Each pair's place in the [points * per_point] table in which sum_by_point lays out every
  /// point's terms side by side. Distinct for all pairs.
  torch::Tensor place;
  int64_t per_point = 0;
  /// Each pair's point in its subdomain's normalised coordinates (x - c) / r [P, inputs], and
  /// the pairs' normalised windows [P] with their first [P, inputs] and second derivatives
  /// [P, inputs, inputs] in x, in closed form (what the forward derivative engine starts from;
  /// no graph).
  torch::Tensor local, window, window_gradient, window_hessian;

  int64_t pairs() const { return point.size(0); }
};

class FbpinnImpl : public Network {
 public:
  explicit FbpinnImpl(FbpinnOptions options);

  torch::Tensor forward(const torch::Tensor& x) override;
  int64_t outputs() const override { return options_.outputs; }
  /// The batched products have no bfloat16 path; a stage asking for one is refused earlier.
  void set_bf16_products(bool on) override;
  bool bf16_products() const override { return false; }

  const FbpinnOptions& options() const { return options_; }
  /// Subdomains over all levels.
  int64_t subdomains() const { return centres_.size(0); }
  /// The window of every subdomain at x [n, inputs]: [n, subdomains], each level's columns
  /// summing to 1 (for output and tests; training never forms this dense matrix).
  torch::Tensor windows(const torch::Tensor& x) const;
  /// Support of subdomain j: lower and upper corner along every input [subdomains, inputs].
  torch::Tensor support_lower() const { return centres_ - radii_; }
  torch::Tensor support_upper() const { return centres_ + radii_; }

  // What the forward derivative engine (src/autodiff/fbpinn.cpp) evaluates the sum from.

  /// Every level's plan for the points x [n, inputs] (its values only; no graph).
  std::vector<LevelPlan> plans(const torch::Tensor& x) const;
  /// Keeps the plans of the last `count` point sets (default 8): as many as a training step
  /// evaluates, slices included, so that none is rebuilt before the points are redrawn.
  void keep_plans(std::size_t count) { plans_kept_ = std::max<std::size_t>(1, count); }
  /// Per subdomain: the centre and half-width of the box its network normalises over (its
  /// support along cut axes, the whole box along the others) [J, inputs], and whether each axis
  /// has a window factor (1) or not (0) [J, inputs].
  const torch::Tensor& centres() const { return centres_; }
  const torch::Tensor& radii() const { return radii_; }
  const torch::Tensor& windowed() const { return windowed_; }
  /// The first subdomain of a level (and, for levels().size(), the total).
  int64_t level_first(std::size_t level) const { return level_first_.at(level); }
  /// Stacked layer parameters, output layer last: weights [J, out, in], biases [J, 1, out].
  const std::vector<torch::Tensor>& stacked_weights() const { return weights_; }
  const std::vector<torch::Tensor>& stacked_biases() const { return biases_; }
  /// Rows of `values` [..., P, k] (pairs along dimension `dim`) added up per point in the
  /// pairs' order: [..., n, k]. Each point's rows are laid side by side and summed in order, so
  /// the result does not depend on how the sum is scheduled (unlike a scatter-add).
  static torch::Tensor sum_by_point(const LevelPlan& plan, const torch::Tensor& values, int64_t n,
                                    int64_t dim = 0);

 private:
  LevelPlan plan_level(const torch::Tensor& coordinates, std::size_t level) const;
  /// Fills the plan's windows and their derivatives.
  void plan_windows(const torch::Tensor& coordinates, LevelPlan& plan) const;
  /// The pairs' points in their subdomains' normalised coordinates [P, inputs] and their
  /// normalised windows [P] (both differentiable with respect to x).
  std::pair<torch::Tensor, torch::Tensor> local_and_window(const torch::Tensor& x,
                                                           const LevelPlan& plan) const;
  /// One level's windowed sum at the n points: [n, outputs].
  torch::Tensor level_output(const torch::Tensor& x, const LevelPlan& plan,
                             std::size_t level) const;

  FbpinnOptions options_;
  torch::Tensor centres_, radii_, windowed_;
  std::vector<int64_t> level_first_;    ///< first subdomain of every level, then the total
  std::vector<torch::Tensor> weights_;  ///< [J, out, in] per layer, output layer last
  std::vector<torch::Tensor> biases_;   ///< [J, 1, out] per layer
  /// The plans of the point sets seen last, most recent first, with a copy of their points.
  mutable std::deque<std::pair<torch::Tensor, std::vector<LevelPlan>>> recent_plans_;
  std::size_t plans_kept_ = 8;
};

TORCH_MODULE(Fbpinn);

}  // namespace tessera::nn
