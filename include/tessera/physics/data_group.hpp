#pragma once
/// A `data` condition: the misfit between the fields and observations at fixed points
/// (docs/case-format.md "Conditions"). The points never move, so resample() does nothing.
/// A dirichlet or residual condition given at points (`"on": {"points": ...}`) is the same
/// group with the condition's residual in place of the misfit.
#include <optional>

#include "tessera/physics/condition_group.hpp"
#include "tessera/physics/loss_group.hpp"

namespace tessera::physics {

class DataGroup : public LossGroup {
 public:
  /// `points` [n, inputs] and `values` [n, fields.size()] (float64, CPU): the observations
  /// inside this subdomain, all of them (this rank keeps `options.replica`'s rows); `fields`
  /// are the network outputs observed, in the columns' order.
  DataGroup(std::string name, std::vector<int> fields, const torch::Tensor& points,
            const torch::Tensor& values, PointOptions options);

  /// `condition` (dirichlet or residual: no normal is read) at `points` [n, inputs]
  /// (float64, CPU), the points inside this subdomain.
  DataGroup(Condition condition, const torch::Tensor& points, PointOptions options);

  void resample() override {}
  /// One term: mean over the points of the summed squared misfits of the observed fields.
  std::vector<FieldRequest> requests(const FieldEvaluator& fields,
                                     const Chunk& chunk = {}) const override;
  std::vector<TermValue> terms(const std::vector<expr::Environment>& environments,
                               const Chunk& chunk = {}) const override;
  std::vector<std::string> term_names() const override { return {name_}; }
  int64_t point_count() const override { return all_points_; }
  std::set<expr::DerivativeKey> derivatives() const override;
  void set_dtype(torch::Dtype dtype) override;

 private:
  void place();

  std::string name_;
  std::vector<int> fields_;
  std::optional<Condition> condition_;  ///< set: a condition at points, not observations
  PointOptions options_;
  int64_t all_points_;
  torch::Tensor source_points_, source_values_;  ///< this replica's rows, float64 on the CPU
  torch::Tensor x_, values_;                     ///< placed in the network's dtype and device
};

}  // namespace tessera::physics
