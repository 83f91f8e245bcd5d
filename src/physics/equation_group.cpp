#include "tessera/physics/equation_group.hpp"

#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

torch::Tensor Replica::rows(const torch::Tensor& x) const {
  if (count == 1) return x;
  const int64_t n = x.size(0);
  return x.slice(0, n * index / count, n * (index + 1) / count);
}

torch::Tensor mean_square(const torch::Tensor& residual) {
  if (residual.numel() == 0) return torch::zeros({}, residual.options());
  return residual.pow(2).mean();
}

std::set<expr::DerivativeKey> derivatives_of(
    const std::vector<const expr::Expression*>& expressions) {
  std::set<expr::DerivativeKey> keys;
  for (const auto* e : expressions) keys.insert(e->derivatives().begin(), e->derivatives().end());
  return keys;
}

EquationGroup::EquationGroup(std::vector<Equation> equations,
                             std::shared_ptr<const geometry::Domain> region, int64_t points,
                             geometry::SamplerKind sampler, core::Rng rng, PointOptions options)
    : equations_(std::move(equations)), sampling_{std::move(region), points, sampler, rng,
                                                  options,           {}} {
  resample();
}

void EquationGroup::resample() {
  auto& s = sampling_;
  s.begin_sample();
  x_ = s.place(s.region->sample_interior(s.points, s.sampler, s.rng));
}

std::set<expr::DerivativeKey> EquationGroup::derivatives() const {
  std::vector<const expr::Expression*> expressions;
  for (const auto& e : equations_) expressions.push_back(&e.residual);
  return derivatives_of(expressions);
}

std::vector<torch::Tensor> equation_residuals(const std::vector<Equation>& equations,
                                              const FieldEvaluator& fields, const torch::Tensor& x,
                                              bool create_graph) {
  std::vector<const expr::Expression*> expressions;
  for (const auto& e : equations) expressions.push_back(&e.residual);
  const auto env = fields.evaluate(x, derivatives_of(expressions), create_graph);
  std::vector<torch::Tensor> residuals;
  for (const auto& e : equations) residuals.push_back(e.residual.evaluate(env));
  return residuals;
}

std::vector<TermValue> EquationGroup::evaluate(const FieldEvaluator& fields,
                                               bool create_graph) const {
  const auto residuals = equation_residuals(equations_, fields, x_, create_graph);
  std::vector<TermValue> terms;
  for (std::size_t i = 0; i < equations_.size(); ++i)
    terms.push_back(sampling_.options.replica.term(equations_[i].name, mean_square(residuals[i]),
                                                   x_.size(0), sampling_.points));
  return terms;
}

std::vector<std::string> EquationGroup::term_names() const {
  std::vector<std::string> names;
  for (const auto& e : equations_) names.push_back(e.name);
  return names;
}

}  // namespace tessera::physics
