#include "tessera/physics/data_group.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

DataGroup::DataGroup(std::string name, std::vector<int> fields, const torch::Tensor& points,
                     const torch::Tensor& values, PointOptions options)
    : name_(std::move(name)),
      fields_(std::move(fields)),
      options_(options),
      all_points_(points.size(0)) {
  TESSERA_ASSERT(values.dim() == 2 && values.size(0) == points.size(0) &&
                     values.size(1) == static_cast<int64_t>(fields_.size()),
                 "data condition '" << name_ << "' has mismatched points and values");
  source_points_ = options.replica.rows(points);
  source_values_ = options.replica.rows(values);
  place();
}

DataGroup::DataGroup(Condition condition, const torch::Tensor& points, PointOptions options)
    : name_(condition.name),
      condition_(std::move(condition)),
      options_(options),
      all_points_(points.size(0)) {
  source_points_ = options.replica.rows(points);
  place();
}

void DataGroup::place() {
  x_ = source_points_.to(options_.device, options_.dtype);
  if (source_values_.defined()) values_ = source_values_.to(options_.device, options_.dtype);
}

void DataGroup::set_dtype(torch::Dtype dtype) {
  options_.dtype = dtype;
  place();
}

std::set<expr::DerivativeKey> DataGroup::derivatives() const {
  // Spatial dimensions matter to the normal derivative only, which a point condition never has.
  if (condition_) return condition_derivatives(*condition_, 0);
  std::set<expr::DerivativeKey> keys;
  for (int f : fields_) keys.insert({f, {}});
  return keys;
}

std::vector<FieldRequest> DataGroup::requests(const FieldEvaluator& fields,
                                              const Chunk& chunk) const {
  return {{&fields, chunk.rows(x_), derivatives(), {}}};
}

std::vector<TermValue> DataGroup::terms(const std::vector<expr::Environment>& environments,
                                        const Chunk& chunk) const {
  const auto& env = environments.at(0);
  if (condition_) {
    const auto r = condition_residual(*condition_, env, {});
    const auto loss = r.size(0) ? mean_square(r) : torch::zeros({}, r.options());
    return {options_.replica.term(name_, loss, r, x_.size(0), all_points_, chunk)};
  }
  const auto values = chunk.rows(values_);
  std::vector<torch::Tensor> misfits;
  for (std::size_t k = 0; k < fields_.size(); ++k)
    misfits.push_back(env.derivatives.at({fields_[k], {}}) -
                      values.select(1, static_cast<int64_t>(k)));
  const auto r = torch::stack(misfits, 1);
  const auto loss = r.size(0) ? r.pow(2).sum(1).mean() : torch::zeros({}, r.options());
  return {options_.replica.term(name_, loss, r, x_.size(0), all_points_, chunk)};
}

}  // namespace tessera::physics
