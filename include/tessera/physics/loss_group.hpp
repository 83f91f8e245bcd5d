#pragma once
/// A loss group: a set of points and the named loss terms computed on them (the equations on
/// the collocation points, one condition on its boundary part, ...). Groups own and resample
/// their points; the trainer weights and sums their terms.
#include <torch/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tessera/core/rng.hpp"
#include "tessera/physics/field_evaluator.hpp"

namespace tessera::physics {

/// What a term's balancing probe is formed from: sum over rows x and columns c of e_xc r_xc /
/// sqrt(points of the whole term), with e_xc = +-1 a fixed pattern keyed by the row's index in
/// the whole sample. Its gradient's squared norm is, in expectation over the signs, the mean
/// over points of |grad r(x)|^2 (the trace of the term's neural tangent kernel per point), which
/// loss balancing measures. Replicas' probes add up to the whole term's. Only the residual is
/// kept; the probe is formed when balancing asks for it, not at every evaluation.
struct Probe {
  torch::Tensor residual;  ///< per-point residuals [rows] or [rows, k]; undefined: no probe
  int64_t first = 0;       ///< the first row's index in the whole sample
  int64_t whole = 1;       ///< points of the whole term

  /// The probe (0-d, on the residual's graph); undefined without residual rows.
  torch::Tensor value() const;
};

/// One loss term on this rank: the mean of the squared residual over `count` points.
/// Global figures are formed from (mean * count, count) sums, never averages of averages.
struct TermValue {
  std::string name;
  torch::Tensor mean_square;  ///< 0-d, differentiable when evaluated for training
  int64_t count = 0;
  /// Points of the whole term when data-parallel replicas each hold a slice of them (0: this
  /// rank holds all). The replica's share of the loss is mean_square * count / total_count, so
  /// the replicas' gradients sum to the gradient of the mean over every point.
  int64_t total_count = 0;
  Probe probe;

  /// count / total_count (1 without replicas).
  double share() const {
    return total_count > 0 ? static_cast<double>(count) / static_cast<double>(total_count) : 1.0;
  }
};

/// Part `index` of `count` of the rows a group holds: one pass of gradient accumulation
/// (training.batch). The parts' terms carry their share of the whole term, so their losses and
/// gradients sum to those of one pass over every row.
struct Chunk {
  int index = 0;
  int count = 1;

  int64_t first(int64_t rows) const { return rows * index / count; }
  int64_t end(int64_t rows) const { return rows * (index + 1) / count; }
  /// This part's rows of x (x itself for one part).
  torch::Tensor rows(const torch::Tensor& x) const;
};

/// Which slice of every sample this rank keeps when `count` data-parallel replicas train one
/// subdomain: all replicas draw the same global sample and replica `index` keeps rows
/// [n * index / count, n * (index + 1) / count).
struct Replica {
  int index = 0;
  int count = 1;

  /// This replica's rows of x (x itself for one replica).
  torch::Tensor rows(const torch::Tensor& x) const;
  /// The TermValue of `mean_square` over part `chunk` of this replica's `held` rows of an
  /// `all`-point sample, whose per-point residuals on that part are `residual` ([rows] or
  /// [rows, k]).
  TermValue term(std::string name, torch::Tensor mean_square, const torch::Tensor& residual,
                 int64_t held, int64_t all, const Chunk& chunk = {}) const;
};

/// Where and how points are placed: dtype/device of the network inputs, and this rank's slice.
struct PointOptions {
  torch::Dtype dtype = torch::kFloat32;
  torch::Device device = torch::kCPU;
  Replica replica;
};

class LossGroup {
 public:
  virtual ~LossGroup() = default;
  /// Draws new points (advancing the group's own random stream).
  virtual void resample() = 0;
  /// What the terms on part `chunk` of the current points ask of the fields, in order.
  virtual std::vector<FieldRequest> requests(const FieldEvaluator& fields,
                                             const Chunk& chunk = {}) const = 0;
  /// The terms on part `chunk` from the environments of requests(fields, chunk), in its order
  /// (evaluated one by one, or with other subdomains' by evaluate_together).
  virtual std::vector<TermValue> terms(const std::vector<expr::Environment>& environments,
                                       const Chunk& chunk = {}) const = 0;
  /// The terms on part `chunk` of the current points; `create_graph` for training losses.
  std::vector<TermValue> evaluate(const FieldEvaluator& fields, bool create_graph,
                                  const Chunk& chunk = {}) const;
  /// Before a pass in `chunks` parts: what the parts need from every point (causal weights).
  virtual void prepare_chunks(const FieldEvaluator& fields, int chunks) const {}
  /// Names of the terms evaluate() returns, in order.
  virtual std::vector<std::string> term_names() const = 0;
  /// Points per resample (for `tessera check`).
  virtual int64_t point_count() const = 0;
  /// Every field derivative the terms read (for `tessera check`).
  virtual std::set<expr::DerivativeKey> derivatives() const = 0;

  /// The random-stream state the current points were drawn from (nullopt: fixed points).
  /// Checkpoints keep it: resample_from() redraws the very same points, whatever the rank or
  /// replica count of the run that continues.
  virtual std::optional<core::Rng::State> sample_origin() const { return std::nullopt; }
  virtual void resample_from(const core::Rng::State& origin) {}

  /// Holds the current points (the same ones) in `dtype` from now on (a stage's dtype).
  virtual void set_dtype(torch::Dtype dtype) = 0;
};

/// mean(r^2) over every element of r ([n] or [n, k]); 0 for no points. One autograd node, whose
/// backward gives the same bits as autograd's through pow and mean (mean_square.cpp).
torch::Tensor mean_square(const torch::Tensor& residual);

}  // namespace tessera::physics
