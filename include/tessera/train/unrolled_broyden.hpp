#pragma once
/// The self-scaled Broyden inverse Hessian that "ssbroyden" keeps as a dense matrix, held as its
/// updates instead: each update is a rank-3 correction built from the step s, the vector
/// u = H y (H before the update) and scalars, so
///
///   H = base I + sum over the kept updates k of [ W_k (-u_k u_k^T / y_k.u_k
///                                                 + phi_k y_k.u_k v_k v_k^T)
///                                                 + W'_k rho_k s_k s_k^T ],
///
/// v_k = rho_k s_k - u_k / y_k.u_k, rho_k = 1 / s_k.y_k, W'_k the product of 1 / tau over the
/// updates after k and W_k = W'_k / tau_k; base is the starting scale times the product of
/// 1 / tau over every update since (the dense matrix's identity part). With at least as many kept
/// updates as were made it is the dense SSBroyden matrix; beyond `memory` updates the oldest one's
/// terms go, so memory and work are O(m n) for m updates of n parameters. Unlike L-BFGS on the last
/// pairs (the BFGS member of the family), every kept update is the Broyden-family member that the
/// dense method chose, with the scaling that the whole run built.
#include <cstdint>
#include <deque>

#include "tessera/core/torch_pch.hpp"

namespace tessera::train {

class UnrolledBroyden {
 public:
  explicit UnrolledBroyden(int64_t memory) : memory_(memory) {}

  std::size_t size() const { return updates_.size(); }
  /// H = scale I, every update forgotten.
  void restart(double scale);
  /// H v (float64, flat).
  torch::Tensor times(const torch::Tensor& v) const;
  /// The update for the step `s` with gradient change `y`, sBs = s.B s, over n = s.numel()
  /// parameters; false (no update) without positive curvature along the step.
  bool update(const torch::Tensor& s, const torch::Tensor& y, double sBs);

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  struct Update {
    double rho, yu, phi, tau;
  };
  int64_t memory_;
  double base_ = 1;
  bool updated_ = false;  ///< an update was made since the last restart (the first is special)
  std::deque<Update> updates_;
  /// Rows of s and u, update i in row (first_ + i) % rows once the rows are full.
  torch::Tensor s_rows_, u_rows_;
  std::size_t first_ = 0;

  int64_t row(std::size_t i) const {
    return static_cast<int64_t>((first_ + i) % static_cast<std::size_t>(s_rows_.size(0)));
  }
};

}  // namespace tessera::train
