#pragma once
/// The inverse Hessian of a limited-memory quasi-Newton method: the last m curvature pairs
/// (s, y) and a base H0 = gamma I, applied to a vector by the two-loop recursion (Nocedal 1980;
/// Liu & Nocedal 1989). Memory and work are O(m n) for n parameters, so the method has no size
/// ceiling.
///
/// H_{k+1} = V_k^T H_k V_k + rho_k s_k s_k^T, V_k = I - rho_k y_k s_k^T, rho_k = 1 / s_k.y_k,
/// with gamma = s.y / y.y of the newest pair.
///
/// The recursion runs on coefficients: every vector it forms is a combination of v and the
/// pairs' vectors, so it needs only the dot products among the pairs (kept as the pairs come,
/// `PairGeometry`) and those of the pairs with v. A vector is held as pieces, one per block
/// (the subdomains of a joint search each hold their own rows of s and y), and those products
/// are summed over every block of the job in one reduction per product of H with a vector and
/// one per new pair, whatever m is.
#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "tessera/core/torch_pch.hpp"

namespace tessera::train {

using Pieces = std::vector<torch::Tensor>;
/// `width` figures per owned block -> their sums over every block of the job (element by
/// element, in a fixed order; collective in a joint search, the block's own figures on its own).
using BlockSum =
    std::function<std::vector<double>(const std::vector<std::vector<double>>&, std::size_t width)>;

/// The scalars a new pair shares across blocks.
struct PairScalars {
  double rho = 0;    ///< 1 / s.y
  double gamma = 1;  ///< the base H0 = gamma I from this pair on
};

/// The pairs' scalars and the dot products among their vectors over the whole vector: the same
/// on every rank and block.
class PairGeometry {
 public:
  explicit PairGeometry(int64_t memory = 0) : memory_(memory) {}
  int64_t memory() const { return memory_; }
  std::size_t size() const { return scalars_.size(); }
  bool empty() const { return scalars_.empty(); }
  const PairScalars& scalars(std::size_t i) const { return scalars_.at(i); }
  /// Dot product of vector `a` of pair i with vector `b` of pair j (false: s, true: y).
  double dot(std::size_t i, bool a, std::size_t j, bool b) const;
  /// Adds a pair with `dots` its vectors' products with every kept pair's, oldest first, then
  /// with its own ({s.s_j, s.y_j, y.s_j, y.y_j} per pair, then {s.s, s.y, y.y}); the oldest
  /// goes beyond `memory` pairs.
  void push(const PairScalars& scalars, const std::vector<double>& dots);
  void clear();
  /// As numbers, and back (checkpoints, and ranks that learn it from the others).
  std::vector<double> flat() const;
  void set_flat(const std::vector<double>& flat);

 private:
  int64_t memory_;
  std::deque<PairScalars> scalars_;
  /// Per pair, its products with itself and every older kept pair: {s.s, s.y, y.s, y.y}.
  std::deque<std::deque<std::array<double, 4>>> dots_;
};

/// The scalars of the pair (s, y) from s.y and y.y; nullopt (no update) when s.y is not
/// positive.
std::optional<PairScalars> pair_scalars(double sy, double yy);

/// One block's pieces of the pairs' vectors, with its copy of the geometry (checkpoints).
class CurvatureHistory {
 public:
  explicit CurvatureHistory(int64_t memory = 0) : geometry_(memory) {}

  const PairGeometry& geometry() const { return geometry_; }
  bool empty() const { return pieces_.empty(); }
  const torch::Tensor& s(std::size_t i) const { return pieces_.at(i).first; }
  const torch::Tensor& y(std::size_t i) const { return pieces_.at(i).second; }
  /// Adds this block's pieces of a pair and the pair's geometry.
  void push(torch::Tensor s, torch::Tensor y, const PairScalars& scalars,
            const std::vector<double>& dots);
  void clear();

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  PairGeometry geometry_;
  std::deque<std::pair<torch::Tensor, torch::Tensor>> pieces_;
};

/// The per-block figures to sum for a new pair's geometry: the products of the new pieces `s`
/// and `y` with every kept pair's and with themselves (PairGeometry::push's order). 4 m + 3
/// figures.
std::vector<double> pair_figures(const CurvatureHistory& block, const torch::Tensor& s,
                                 const torch::Tensor& y);

/// H v for the inverse Hessian of `geometry` whose vectors the blocks hold (`v`: one piece per
/// block, as the result). One call of `sum`.
Pieces history_times(const PairGeometry& geometry,
                     const std::vector<const CurvatureHistory*>& blocks, const Pieces& v,
                     const BlockSum& sum);

}  // namespace tessera::train
