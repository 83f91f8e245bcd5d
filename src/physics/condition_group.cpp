#include "tessera/physics/condition_group.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

std::vector<std::string> normal_names(const std::vector<std::string>& spatial) {
  std::vector<std::string> names;
  for (const auto& s : spatial) names.push_back("n_" + s);
  return names;
}

namespace {

/// du/dn = sum_i n_i du/dx_i; the normals are the extras named in `normals` (axis order).
torch::Tensor normal_derivative(const Condition& c, const expr::Environment& env,
                                const std::vector<std::string>& normals) {
  torch::Tensor sum;
  for (std::size_t axis = 0; axis < normals.size(); ++axis) {
    const auto& du = env.derivatives.at(expr::DerivativeKey{c.field, {static_cast<int>(axis)}});
    auto term = env.extra.at(normals[axis]) * du;
    sum = sum.defined() ? sum + term : term;
  }
  return sum;
}

}  // namespace

std::set<expr::DerivativeKey> condition_derivatives(const Condition& c, int spatial_dims) {
  std::set<expr::DerivativeKey> keys;
  for (const auto* e : {&c.value, &c.a, &c.b, &c.expression})
    if (e->has_value()) keys.insert((*e)->derivatives().begin(), (*e)->derivatives().end());
  switch (c.type) {
    case ConditionType::dirichlet:
      keys.insert({c.field, {}});
      break;
    case ConditionType::initial:
      keys.insert(c.time_axis >= 0 ? expr::DerivativeKey{c.field, {c.time_axis}}
                                   : expr::DerivativeKey{c.field, {}});
      break;
    case ConditionType::robin:
      keys.insert({c.field, {}});
      [[fallthrough]];
    case ConditionType::neumann:
      for (int axis = 0; axis < spatial_dims; ++axis) keys.insert({c.field, {axis}});
      break;
    case ConditionType::residual:
      break;
  }
  return keys;
}

namespace {

// lhs minus the condition's value. A constant value is subtracted as a number, and 0 not at
// all: the same elements as subtracting it evaluated at every point, without building that
// tensor (three operations) for the walls of every subdomain at every iteration, and for 0
// without the subtraction's backward node either.
torch::Tensor minus_value(const torch::Tensor& lhs, const Condition& c,
                          const expr::Environment& env) {
  if (!c.value->is_constant()) return lhs - c.value->evaluate(env);
  const double value = c.value->evaluate_constant();
  return value == 0 ? lhs : lhs - value;
}

}  // namespace

torch::Tensor condition_residual(const Condition& c, const expr::Environment& env,
                                 const std::vector<std::string>& normals) {
  auto field = [&](std::vector<int> wrt) { return env.derivatives.at({c.field, std::move(wrt)}); };
  switch (c.type) {
    case ConditionType::dirichlet:
      return minus_value(field({}), c, env);
    case ConditionType::initial:
      return minus_value(c.time_axis >= 0 ? field({c.time_axis}) : field({}), c, env);
    case ConditionType::neumann:
      return minus_value(normal_derivative(c, env, normals), c, env);
    case ConditionType::robin:
      return minus_value(
          c.a->evaluate(env) * field({}) + c.b->evaluate(env) * normal_derivative(c, env, normals),
          c, env);
    case ConditionType::residual:
      return c.expression->evaluate(env);
  }
  TESSERA_UNREACHABLE("unknown condition type");
}

ConditionGroup::ConditionGroup(Condition condition, std::shared_ptr<const geometry::Domain> region,
                               int64_t points, geometry::SamplerKind sampler, core::Rng rng,
                               PointOptions options)
    : condition_(std::move(condition)), sampling_{std::move(region), points, sampler, rng,
                                                  options,           {}} {
  resample();
}

void ConditionGroup::resample() {
  auto& s = sampling_;
  s.begin_sample();
  auto sample = s.region->sample_boundary(condition_.on, s.points, s.sampler, s.rng);
  sampled_ = sample.points.size(0);
  x_ = s.place(sample.points);
  normals_ = s.place(sample.normals);
}

std::set<expr::DerivativeKey> ConditionGroup::derivatives() const {
  return condition_derivatives(condition_, sampling_.region->spatial_dims());
}

std::vector<FieldRequest> ConditionGroup::requests(const FieldEvaluator& fields,
                                                   const Chunk& chunk) const {
  std::map<std::string, torch::Tensor> normals;
  const auto names = normal_names(sampling_.region->spatial_names());
  const auto part_normals = chunk.rows(normals_);
  for (std::size_t axis = 0; axis < names.size(); ++axis)
    normals[names[axis]] = part_normals.select(1, static_cast<int64_t>(axis));
  return {{&fields, chunk.rows(x_), derivatives(), std::move(normals)}};
}

std::vector<TermValue> ConditionGroup::terms(const std::vector<expr::Environment>& environments,
                                             const Chunk& chunk) const {
  const auto names = normal_names(sampling_.region->spatial_names());
  const auto r = condition_residual(condition_, environments.at(0), names);
  return {sampling_.options.replica.term(condition_.name, mean_square(r), r, x_.size(0), sampled_,
                                         chunk)};
}

PeriodicGroup::PeriodicGroup(std::string name,
                             std::pair<geometry::Selector, geometry::Selector> faces, int fields,
                             std::shared_ptr<const geometry::Domain> region, int64_t points,
                             geometry::SamplerKind sampler, core::Rng rng, PointOptions options)
    : name_(std::move(name)),
      faces_(std::move(faces)),
      fields_(fields),
      sampling_{std::move(region), points, sampler, rng, options, {}} {
  resample();
}

void PeriodicGroup::resample() {
  auto& s = sampling_;
  s.begin_sample();
  auto [low, high] = s.region->sample_periodic(faces_, s.points, s.sampler, s.rng);
  sampled_ = low.points.size(0);
  low_ = s.place(low.points);
  high_ = s.place(high.points);
}

std::set<expr::DerivativeKey> PeriodicGroup::derivatives() const {
  std::set<expr::DerivativeKey> keys;
  for (int f = 0; f < fields_; ++f) {
    keys.insert({f, {}});
    for (int axis = 0; axis < sampling_.region->spatial_dims(); ++axis) keys.insert({f, {axis}});
  }
  return keys;
}

std::vector<FieldRequest> PeriodicGroup::requests(const FieldEvaluator& fields,
                                                  const Chunk& chunk) const {
  const auto keys = derivatives();
  return {{&fields, chunk.rows(low_), keys, {}}, {&fields, chunk.rows(high_), keys, {}}};
}

std::vector<TermValue> PeriodicGroup::terms(const std::vector<expr::Environment>& environments,
                                            const Chunk& chunk) const {
  const auto keys = derivatives();
  const auto& low = environments.at(0);
  const auto& high = environments.at(1);
  std::vector<torch::Tensor> jumps;
  for (const auto& key : keys) jumps.push_back(low.derivatives.at(key) - high.derivatives.at(key));
  // Mean over points of the summed squared jumps of every matched quantity.
  const auto r = torch::stack(jumps, 1);
  const auto loss = r.numel() ? r.pow(2).sum(1).mean() : torch::zeros({}, r.options());
  return {sampling_.options.replica.term(name_, loss, r, low_.size(0), sampled_, chunk)};
}

}  // namespace tessera::physics
