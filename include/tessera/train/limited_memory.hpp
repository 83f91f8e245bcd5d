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
  double gamma = 1;  ///< the base H0 = gamma I from this pair on (L-BFGS)
  /// Self-scaled: the update divides the approximation before it by tau, H_{k+1} =
  /// V^T (H_k / tau) V + rho s s^T, and the base is the scale the dropped pairs left behind.
  double tau = 1;
  bool self_scaled = false;
};

/// The self-scaled Broyden rule (Al-Baali; as used for PINNs by Urban, Stefanou & Pons 2024):
/// from h = y.H y / s.y and b = s.B s / s.y of a new pair, the family member theta and the
/// scaling tau of a matrix over n parameters (`first`: the first update of a fresh matrix).
struct BroydenScaling {
  double theta = 0;
  double tau = 1;
};
BroydenScaling self_scaled_broyden(double h, double b, double n, bool first);

/// The pairs' scalars and the dot products among their vectors over the whole vector: the same
/// on every rank and block.
class PairGeometry {
 public:
  explicit PairGeometry(int64_t memory = 0) : memory_(memory) {}
  int64_t memory() const { return memory_; }
  std::size_t size() const { return scalars_.size(); }
  bool empty() const { return scalars_.empty(); }
  /// The base H0 = base() I of a self-scaled history: 1 when fresh, divided by each dropped
  /// pair's tau. Plain L-BFGS uses the newest pair's gamma instead.
  double base() const { return base_; }
  bool self_scaled() const { return !scalars_.empty() && scalars_.back().self_scaled; }
  const PairScalars& scalars(std::size_t i) const { return scalars_.at(i); }
  /// Dot product of vector `a` of pair i with vector `b` of pair j (false: s, true: y).
  double dot(std::size_t i, bool a, std::size_t j, bool b) const {
    return gram_[(slot(i) * slots_ + slot(j)) * 4 + (a ? 2 : 0) + (b ? 1 : 0)];
  }
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
  double base_ = 1;
  std::deque<PairScalars> scalars_;
  /// The pairs' products in one block, read for every coefficient of every product with H:
  /// entry (a, b) holds {s_a.s_b, s_a.y_b, y_a.s_b, y_a.y_b} for the pairs in slots a and b;
  /// pair i is in slot (first_ + i) % slots_. Once `memory` pairs are kept, a new pair takes
  /// the oldest one's slot.
  std::vector<double> gram_;
  std::size_t slots_ = 0;
  std::size_t first_ = 0;

  std::size_t slot(std::size_t i) const { return (first_ + i) % slots_; }
  /// Room for `slots` pairs, the kept ones moved to the first slots in order.
  void reserve(std::size_t slots);
  /// Stores {x_a.x_b} of the pairs in slots a and b, and its mirror.
  void set_products(std::size_t a, std::size_t b, const std::array<double, 4>& products);
};

/// The scalars of the pair (s, y) from s.y and y.y; nullopt (no update) when s.y is not
/// positive.
std::optional<PairScalars> pair_scalars(double sy, double yy);

/// One block's pieces of the pairs' vectors, with its copy of the geometry (checkpoints). The
/// pieces are rows of two matrices, so that their products with a vector and their combinations
/// are one matrix-vector product each; once `memory` pairs are kept, a new pair takes the oldest
/// one's row.
class CurvatureHistory {
 public:
  explicit CurvatureHistory(int64_t memory = 0) : geometry_(memory) {}

  const PairGeometry& geometry() const { return geometry_; }
  bool empty() const { return geometry_.empty(); }
  /// Pair i's pieces, oldest first.
  torch::Tensor s(std::size_t i) const { return s_rows_[row(i)]; }
  torch::Tensor y(std::size_t i) const { return y_rows_[row(i)]; }
  /// The products of every pair's pieces with `v`, oldest pair first: s_j.v, y_j.v interleaved.
  std::vector<double> products_with(const torch::Tensor& v) const;
  /// `scale` v + sum_j s_coefficients[j] s_j + y_coefficients[j] y_j.
  torch::Tensor combination(const torch::Tensor& v, double scale,
                            const std::vector<double>& s_coefficients,
                            const std::vector<double>& y_coefficients) const;
  /// Adds this block's pieces of a pair and the pair's geometry.
  void push(const torch::Tensor& s, const torch::Tensor& y, const PairScalars& scalars,
            const std::vector<double>& dots);
  void clear();

  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  std::size_t row(std::size_t i) const {
    return (first_ + i) % static_cast<std::size_t>(s_rows_.size(0));
  }
  /// Room for `rows` pairs, the kept ones moved to the first rows in order.
  void reserve(int64_t rows, const torch::Tensor& like);

  PairGeometry geometry_;
  torch::Tensor s_rows_, y_rows_;  ///< [rows, n]; pair i in row (first_ + i) % rows
  std::size_t first_ = 0;
};

/// The per-block figures to sum for a new pair's geometry: the products of the new pieces `s`
/// and `y` with every kept pair's and with themselves (PairGeometry::push's order). 4 m + 3
/// figures.
std::vector<double> pair_figures(const CurvatureHistory& block, const torch::Tensor& s,
                                 const torch::Tensor& y);

/// The scalars of a new pair from its summed figures `dots` (pair_figures' order) and
/// s.B s = -t s.g (B s = -t g along d = -H g), for a self-scaled history over n parameters:
/// y.H y from the kept pairs' geometry, then tau by self_scaled_broyden with the BFGS member
/// (the scaling carries the method's accuracy; the member changes it little). nullopt when
/// s.y is not positive.
std::optional<PairScalars> self_scaled_pair_scalars(const PairGeometry& geometry,
                                                    const std::vector<double>& dots, double sBs,
                                                    double n);

/// H v for the inverse Hessian of `geometry` whose vectors the blocks hold (`v`: one piece per
/// block, as the result). One call of `sum`.
Pieces history_times(const PairGeometry& geometry,
                     const std::vector<const CurvatureHistory*>& blocks, const Pieces& v,
                     const BlockSum& sum);

}  // namespace tessera::train
