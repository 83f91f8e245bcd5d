#pragma once
/// The PDE residuals on the collocation points of a subdomain.
#include <memory>

#include "tessera/core/rng.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/physics/causal_weights.hpp"
#include "tessera/physics/loss_group.hpp"
#include "tessera/physics/point_sampling.hpp"
#include "tessera/physics/residual_sampling.hpp"

namespace tessera::physics {

struct Equation {
  std::string name;
  expr::Expression residual;
};

/// Collocation points drawn in `region` (the subdomain's part of the domain) and one term per
/// equation: mean(residual^2), or with a causal window the causally weighted mean over time
/// chunks, (1/K) sum_k w_k mean_k(residual^2) over the K chunks that hold points. The chunk
/// means and weights are those of the whole sample: a replica holding a slice of it adds its
/// per-chunk sums to its group's (set_chunk_sum) and keeps its rows' part of the term.
class EquationGroup : public LossGroup {
 public:
  EquationGroup(std::vector<Equation> equations, std::shared_ptr<const geometry::Domain> region,
                int64_t points, geometry::SamplerKind sampler, core::Rng rng, PointOptions options,
                std::optional<CausalWindow> causal = std::nullopt);

  void resample() override;
  void prepare_chunks(const FieldEvaluator& fields, int chunks) const override;
  std::vector<FieldRequest> requests(const FieldEvaluator& fields,
                                     const Chunk& chunk = {}) const override;
  std::vector<TermValue> terms(const std::vector<expr::Environment>& environments,
                               const Chunk& chunk = {}) const override;
  std::vector<std::string> term_names() const override;
  /// The whole sample's size: the point count, or the count adapt() or keep() kept.
  int64_t point_count() const override {
    return adapted_.defined() ? adapted_.size(0) : sampling_.points;
  }
  std::set<expr::DerivativeKey> derivatives() const override;
  std::optional<core::Rng::State> sample_origin() const override { return sampling_.origin; }
  void resample_from(const core::Rng::State& origin) override {
    sampling_.rewind(origin);
    resample();
  }
  void set_dtype(torch::Dtype dtype) override;

  /// Redistributes the points by their residual (RAD, see residual_sampling.hpp): candidates
  /// from the group's stream, their residuals under `fields`, a weighted draw from the same
  /// stream. Every replica computes the same whole sample and keeps its rows.
  void adapt(const FieldEvaluator& fields, const ResidualSampling& rule);
  /// adapt() in two steps, for a draw whose counts and density come from several subdomains:
  /// the candidates (`rule.candidates` x the point count, from the group's stream) with their
  /// residual magnitudes, then `count` of them kept with probability proportional to `density`.
  ResidualCandidates candidates(const FieldEvaluator& fields, const ResidualSampling& rule);
  void keep(const ResidualCandidates& candidates, const torch::Tensor& density, int64_t count);
  /// The space-time measure of the region the points are drawn in.
  double measure() const { return sampling_.region->measure(); }
  /// The whole current sample (float64, CPU) when it came from adapt(), which its random-stream
  /// state alone cannot reproduce (checkpoints keep it); undefined otherwise.
  const torch::Tensor& adapted_points() const { return adapted_; }
  /// Takes a whole sample that adapt() produced (from a checkpoint).
  void set_adapted_points(const torch::Tensor& all);

  /// Points [n, inputs] currently in use.
  const torch::Tensor& points() const { return x_; }
  /// The point count the case or stage set; candidates are drawn from it.
  int64_t configured_points() const { return sampling_.points; }
  /// Replace the point count (a stage's `points`); takes effect at the next resample or
  /// redistribution (which draws its candidates from it).
  void set_point_count(int64_t points) { sampling_.points = points; }
  core::Rng& rng() { return sampling_.rng; }
  /// Whether causal weights apply (Adam stages) or the plain mean (quasi-Newton stages, whose
  /// line search needs one objective); no effect without a causal window.
  void set_causal(bool active) { causal_active_ = active; }
  bool causal() const { return causal_ && causal_active_; }
  /// How this replica's per-chunk sums join the other replicas' (unset: one replica). While
  /// causal weights apply, every terms() of a pass not cut into parts and every
  /// prepare_chunks() calls it once, on every replica alike.
  void set_chunk_sum(ChunkSum sum) { chunk_sum_ = std::move(sum); }
  /// The causal weights of the last evaluation, one per chunk (undefined before one).
  const torch::Tensor& last_causal_weights() const { return weighting_.weights; }

 private:
  std::vector<Equation> equations_;
  PointSampling sampling_;
  torch::Tensor x_;
  std::optional<CausalWindow> causal_;
  bool causal_active_ = true;
  torch::Tensor chunk_;  ///< time chunk of every row of x_ (with a causal window)
  torch::Tensor
      adapted_;  ///< the whole sample from adapt(), float64 CPU (undefined: from the stream)
  ChunkSum chunk_sum_;
  /// The causal weighting of the last evaluation over every row or of prepare_chunks().
  mutable ChunkWeighting weighting_;

  /// The weighting from this replica's per-chunk sums and counts, those of its group added.
  ChunkWeighting weigh(const std::vector<torch::Tensor>& sums, const torch::Tensor& counts) const;
  /// The causal terms of a pass over every row (whole, or one part of it).
  std::vector<torch::Tensor> causal_losses(const std::vector<torch::Tensor>& residuals) const;
  /// The causal terms of one part of a pass, weighed as prepare_chunks() found.
  std::vector<torch::Tensor> causal_part_losses(const std::vector<torch::Tensor>& residuals,
                                                const Chunk& chunk, int64_t rows) const;
  /// Whole sample over `rows`: what `rows` rows add to the loss, times this, is the mean their
  /// TermValue carries, whose share (rows / whole sample, see Replica::term) gives it back.
  double mean_per_share(int64_t rows) const;
};

/// Evaluates all equations' residuals at x: [n] each, in equation order.
std::vector<torch::Tensor> equation_residuals(const std::vector<Equation>& equations,
                                              const FieldEvaluator& fields, const torch::Tensor& x,
                                              bool create_graph);

/// Union of the derivatives the expressions read.
std::set<expr::DerivativeKey> derivatives_of(
    const std::vector<const expr::Expression*>& expressions);

}  // namespace tessera::physics
