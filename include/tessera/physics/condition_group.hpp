#pragma once
/// Boundary, initial and periodic conditions as loss groups (docs/case-format.md "Conditions").
#include <memory>
#include <optional>

#include "tessera/core/rng.hpp"
#include "tessera/expr/expression.hpp"
#include "tessera/geometry/domain.hpp"
#include "tessera/physics/loss_group.hpp"
#include "tessera/physics/point_sampling.hpp"

namespace tessera::physics {

enum class ConditionType { dirichlet, neumann, robin, initial, residual };

/// A pointwise condition on a boundary part. Expressions may read the outward normal as n_<x>.
struct Condition {
  std::string name;
  ConditionType type = ConditionType::dirichlet;
  int field = 0;                               ///< dirichlet, neumann, robin, initial
  std::optional<expr::Expression> value;       ///< dirichlet, neumann, robin, initial
  std::optional<expr::Expression> a, b;        ///< robin: a*u + b*du/dn = value
  std::optional<expr::Expression> expression;  ///< residual
  int time_axis = -1;                          ///< initial: >= 0 makes it u_t = value (velocity)
  geometry::Selector on;
};

/// Names of the normal components as expressions read them: "n_x", "n_y", ...
std::vector<std::string> normal_names(const std::vector<std::string>& spatial);

/// The residual of `condition` at points with the given environment, which holds the outward
/// normal components as the extras named `normals` (axis order): [n].
torch::Tensor condition_residual(const Condition& condition, const expr::Environment& env,
                                 const std::vector<std::string>& normals);

/// Every derivative `condition` reads (its field's spatial gradient for neumann/robin).
std::set<expr::DerivativeKey> condition_derivatives(const Condition& condition, int spatial_dims);

class ConditionGroup : public LossGroup {
 public:
  ConditionGroup(Condition condition, std::shared_ptr<const geometry::Domain> region,
                 int64_t points, geometry::SamplerKind sampler, core::Rng rng,
                 PointOptions options);

  void resample() override;
  std::vector<FieldRequest> requests(const FieldEvaluator& fields,
                                     const Chunk& chunk = {}) const override;
  std::vector<TermValue> terms(const std::vector<expr::Environment>& environments,
                               const Chunk& chunk = {}) const override;
  std::vector<std::string> term_names() const override { return {condition_.name}; }
  int64_t point_count() const override { return sampling_.points; }
  std::set<expr::DerivativeKey> derivatives() const override;
  std::optional<core::Rng::State> sample_origin() const override { return sampling_.origin; }
  void resample_from(const core::Rng::State& origin) override {
    sampling_.rewind(origin);
    resample();
  }
  void set_dtype(torch::Dtype dtype) override {
    if (sampling_.set_dtype(dtype)) resample_from(sampling_.origin);
  }
  core::Rng& rng() { return sampling_.rng; }
  const torch::Tensor& points() const { return x_; }

 private:
  Condition condition_;
  PointSampling sampling_;
  int64_t sampled_ = 0;  ///< rows of the whole sample (all replicas)
  torch::Tensor x_, normals_;
};

/// Periodic along one spatial axis: every field and its first spatial derivatives agree at
/// matched points of the two opposite faces.
class PeriodicGroup : public LossGroup {
 public:
  PeriodicGroup(std::string name, std::pair<geometry::Selector, geometry::Selector> faces,
                int fields, std::shared_ptr<const geometry::Domain> region, int64_t points,
                geometry::SamplerKind sampler, core::Rng rng, PointOptions options);

  void resample() override;
  std::vector<FieldRequest> requests(const FieldEvaluator& fields,
                                     const Chunk& chunk = {}) const override;
  std::vector<TermValue> terms(const std::vector<expr::Environment>& environments,
                               const Chunk& chunk = {}) const override;
  std::vector<std::string> term_names() const override { return {name_}; }
  int64_t point_count() const override { return sampling_.points; }
  std::set<expr::DerivativeKey> derivatives() const override;
  std::optional<core::Rng::State> sample_origin() const override { return sampling_.origin; }
  void resample_from(const core::Rng::State& origin) override {
    sampling_.rewind(origin);
    resample();
  }
  void set_dtype(torch::Dtype dtype) override {
    if (sampling_.set_dtype(dtype)) resample_from(sampling_.origin);
  }
  core::Rng& rng() { return sampling_.rng; }

 private:
  std::string name_;
  std::pair<geometry::Selector, geometry::Selector> faces_;
  int fields_;
  PointSampling sampling_;
  int64_t sampled_ = 0;  ///< rows of the whole sample (all replicas)
  torch::Tensor low_, high_;
};

}  // namespace tessera::physics
