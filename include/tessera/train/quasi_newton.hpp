#pragma once
/// Quasi-Newton minimisation: BFGS, and the self-scaled Broyden method (SSBroyden; Al-Baali &
/// Khalfan; used for PINNs by Urban, Stefanou & Pons 2024) that rescales the approximation at
/// every step so that it tracks the loss's curvature as the loss falls over many orders of
/// magnitude. The search direction, the line search and the update are in double precision
/// whatever the parameters' dtype. The inverse Hessian is dense (n^2 doubles for n parameters,
/// which suits networks of a few thousand parameters) or, with `memory` m > 0, the last m
/// curvature pairs (limited_memory.hpp: L-BFGS) or, with `whole_updates`, the last m SSBroyden
/// updates (unrolled_broyden.hpp).
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <optional>

#include "tessera/train/limited_memory.hpp"
#include "tessera/train/strong_wolfe.hpp"
#include "tessera/train/unrolled_broyden.hpp"

namespace tessera::train {

enum class QuasiNewtonUpdate { bfgs, ssbroyden };

struct QuasiNewtonOptions : public torch::optim::OptimizerCloneableOptions<QuasiNewtonOptions> {
  QuasiNewtonOptions(QuasiNewtonUpdate update = QuasiNewtonUpdate::ssbroyden)  // NOLINT
      : update_(update) {}
  TORCH_ARG(QuasiNewtonUpdate, update);
  /// The first trial step of every line search (the first iteration scales it by 1 / |g|_1).
  TORCH_ARG(double, lr) = 1.0;
  /// Iterations per step() call.
  TORCH_ARG(int64_t, max_iter) = 20;
  /// Stop when the largest gradient entry is at most this.
  TORCH_ARG(double, tolerance_grad) = 1e-12;
  /// Stop when a step changes no parameter by more than this times (1 + the largest one).
  TORCH_ARG(double, tolerance_change) = 1e-15;
  /// 0: a dense inverse Hessian; m > 0: the last m curvature pairs.
  TORCH_ARG(int64_t, memory) = 0;
  /// With memory m > 0 and the SSBroyden update: the last m updates kept whole
  /// (unrolled_broyden.hpp) instead of the last m curvature pairs.
  TORCH_ARG(bool, whole_updates) = false;

 public:
  double get_lr() const override { return lr(); }
  void set_lr(const double lr) override { this->lr(lr); }
};

class QuasiNewton : public torch::optim::Optimizer {
 public:
  QuasiNewton(std::vector<torch::Tensor> parameters, QuasiNewtonOptions options);

  /// Up to max_iter iterations; `closure` zeroes the gradients, computes the loss and
  /// backpropagates it. Returns the loss at the final parameters.
  torch::Tensor step(LossClosure closure) override;

  /// The whole state (inverse Hessian, gradient, loss), so a continued run is bit-identical.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  int64_t iterations() const { return iterations_; }
  /// Whether a stopping test held (further steps do nothing).
  bool converged() const { return converged_; }
  /// For a driver that moves several blocks (subdomains coupled through interfaces) with one
  /// line search over their summed loss; the optimizer then keeps only its block's inverse
  /// Hessian. The search direction -H g of this block for its gradient `gradient` (flat,
  /// float64); H restarts as a multiple of the identity scaled to the gradient when it is new
  /// or no longer gives a descent direction.
  torch::Tensor block_direction(const torch::Tensor& gradient);
  /// Updates the block's inverse Hessian after the common step of length `step_length` along
  /// the block_direction() for `gradient`: `s` the block's step, `y` its gradient change.
  void block_update(const torch::Tensor& s, const torch::Tensor& y, const torch::Tensor& gradient,
                    double step_length);
  /// Forgets the block's curvature (the common line search found no lower point, or a
  /// row-distributed matrix restarts).
  void block_restart() { hessian_ = torch::Tensor(), history_.clear(), updates_ = 0; }
  /// The curvature pairs of a limited-memory method (a joint search drives every block's).
  CurvatureHistory& history() { return history_; }

  /// For a driver that keeps one inverse Hessian over several blocks, distributed by rows: this
  /// optimizer holds the rows [offset, offset + its parameter count) of a `columns` x `columns`
  /// matrix, which restarts as the identity. Returns those rows times `full` (a vector over all
  /// blocks, in the driver's order).
  torch::Tensor rows_times(const torch::Tensor& full, int64_t offset);
  /// Updates the rows after a common step: `s`, `y` and `Hy` (the whole matrix times y) over all
  /// blocks, `sBs` = s . B s for the whole matrix. `first`: the matrix had no update since it
  /// (re)started; the caller tracks that, as all blocks decide it together. The rows do not
  /// change when s.y <= 0, a decision that is the same for every block. Returns the rows, as
  /// they now are, times `next` (a vector over all blocks: the next iteration's gradient), in
  /// the same pass over the matrix as the update.
  torch::Tensor rows_update(const torch::Tensor& s, const torch::Tensor& y, const torch::Tensor& Hy,
                            double sBs, int64_t offset, bool first, const torch::Tensor& next);
  /// Whether the block has had no update since its inverse Hessian (re)started.
  bool block_fresh() const { return updates_ == 0; }

  torch::Tensor flat_parameters() const;
  /// The gradients of the parameters as one float64 vector (zeros where undefined).
  torch::Tensor flat_gradient() const;
  void set_parameters(const torch::Tensor& flat);

  /// Bytes of the inverse Hessian for `parameters` trainable values.
  static double hessian_bytes(int64_t parameters) {
    return 8.0 * static_cast<double>(parameters) * static_cast<double>(parameters);
  }

 private:
  const QuasiNewtonOptions& options() const;
  /// Evaluates the closure: the loss and the flat double-precision gradient.
  double evaluate(const LossClosure& closure, torch::Tensor& gradient);
  /// H <- the update for the step s with gradient change y; `sBs` is s . B s (B = H^-1).
  /// Returns the new H times `times` when the dense update computed it, else undefined.
  torch::Tensor update_inverse_hessian(const torch::Tensor& s, const torch::Tensor& y, double sBs,
                                       const torch::Tensor& times = {});
  /// H v, dense or from the pairs.
  torch::Tensor inverse_hessian_times(const torch::Tensor& v) const;
  /// H <- `scale` I (dense) or no pairs (limited memory, which then applies `scale` itself).
  void restart_inverse_hessian(int64_t n, const torch::TensorOptions& options, double scale = 1);

  torch::Tensor hessian_;     ///< inverse Hessian approximation [n, n] (or its rows), float64
  CurvatureHistory history_;  ///< instead, with memory > 0
  UnrolledBroyden whole_updates_{0};  ///< instead, with whole_updates
  bool keeps_whole_updates_ = false;
  double fresh_scale_ = 1;  ///< limited memory: H = this times I while there is no pair
  torch::Tensor gradient_;  ///< at the current parameters, float64
  double loss_ = 0;
  int64_t iterations_ = 0;
  int64_t updates_ = 0;  ///< inverse-Hessian updates so far (the first one also scales H)
  bool converged_ = false;
};

/// One BFGS or SSBroyden update of the rows [offset, offset + H.size(0)) of an inverse Hessian,
/// given the whole step `s`, gradient change `y`, product `Hy` of the whole matrix with y, and
/// sBs = s . B s. `first`: the matrix has had no update since it started (BFGS then rescales
/// it; SSBroyden scales differently). Returns nothing, changing nothing, when s.y is not
/// positive; else the updated rows times `times` (undefined without it), computed in the same
/// pass over the rows.
std::optional<torch::Tensor> update_rows(torch::Tensor& H, int64_t offset, QuasiNewtonUpdate method,
                                         bool first, const torch::Tensor& s, const torch::Tensor& y,
                                         torch::Tensor Hy, double sBs,
                                         const torch::Tensor& times = {});

/// Rows [offset, offset + rows) of the `columns` x `columns` identity.
torch::Tensor identity_rows(int64_t rows, int64_t columns, int64_t offset,
                            const torch::TensorOptions& options);

}  // namespace tessera::train
