#include "tessera/physics/interface_side.hpp"

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::physics {

std::vector<std::string> interface_term_names(const InterfaceWeights& w) {
  std::vector<std::string> names;
  if (w.continuity > 0) names.push_back(continuity_term);
  if (w.residual > 0) names.push_back(residual_term);
  if (w.flux > 0) names.push_back(flux_term);
  if (w.gradient > 0) names.push_back(gradient_term);
  return names;
}

InterfaceSide::InterfaceSide(int interface_id, int side, int axis, const torch::Tensor& points,
                             int fields, std::vector<Equation> equations,
                             std::vector<std::vector<expr::Expression>> fluxes,
                             InterfaceWeights weights, int spatial_dims, Replica replica)
    : interface_id_(interface_id),
      side_(side),
      axis_(axis),
      replica_(replica),
      points_(replica.rows(points)),
      all_points_(points.size(0)),
      fields_(fields),
      equations_(std::move(equations)),
      fluxes_(std::move(fluxes)),
      weights_(weights),
      spatial_dims_(spatial_dims) {
  // A time cut has no spatial flux: continuity carries the conserved quantity there.
  if (axis_ >= spatial_dims_) weights_.flux = 0;
  TESSERA_CHECK(weights_.flux == 0 || fluxes_.size() == equations_.size(),
                "interface flux continuity needs a flux for every equation");
}

void InterfaceSide::set_dtype(torch::Dtype dtype) {
  points_ = points_.to(dtype);
  // From the draw (float64), not from a copy rounded to the previous dtype.
  if (draw_) resample_from(origin_);
}

void InterfaceSide::set_redraw(PointDraw draw, const core::Rng& stream) {
  draw_ = std::move(draw);
  stream_ = stream;
  // Redraws the current points, which leaves the stream where the next draw starts.
  resample();
}

void InterfaceSide::resample() {
  if (!draw_) return;
  origin_ = stream_.state();
  const auto all = draw_(stream_);
  TESSERA_CHECK(all.size(0) == all_points_, "interface " << interface_id_ << ": a redraw gave "
                                                         << all.size(0) << " points, not "
                                                         << all_points_);
  points_ = replica_.rows(all).to(points_.options());
}

std::optional<core::Rng::State> InterfaceSide::sample_origin() const {
  if (!draw_) return std::nullopt;
  return origin_;
}

void InterfaceSide::resample_from(const core::Rng::State& origin) {
  stream_.set_state(origin);
  resample();
}

InterfaceSide::Layout InterfaceSide::layout() const {
  const auto equations = static_cast<int64_t>(equations_.size());
  return {fields_, weights_.residual > 0 ? equations : 0, weights_.flux > 0 ? equations : 0,
          weights_.gradient > 0 ? fields_ : 0};
}

int64_t InterfaceSide::quantities() const { return layout().total(); }

std::set<expr::DerivativeKey> InterfaceSide::derivatives() const {
  std::set<expr::DerivativeKey> keys;
  for (int f = 0; f < fields_; ++f) {
    keys.insert({f, {}});
    if (weights_.gradient > 0) keys.insert({f, {axis_}});
  }
  std::vector<const expr::Expression*> expressions;
  if (weights_.residual > 0)
    for (const auto& e : equations_) expressions.push_back(&e.residual);
  if (weights_.flux > 0)
    for (const auto& e : fluxes_) expressions.push_back(&e.at(axis_));
  auto more = derivatives_of(expressions);
  keys.insert(more.begin(), more.end());
  return keys;
}

FieldRequest InterfaceSide::request(const FieldEvaluator& fields, const Chunk& chunk) const {
  return {&fields, chunk.rows(points_), derivatives(), {}};
}

torch::Tensor InterfaceSide::values_from(const expr::Environment& env) const {
  std::vector<torch::Tensor> columns;
  for (int f = 0; f < fields_; ++f) columns.push_back(env.derivatives.at({f, {}}));
  if (weights_.residual > 0)
    for (const auto& e : equations_) columns.push_back(e.residual.evaluate(env));
  // Both sides use the same normal (+e_axis), so the jump of F.n is the jump of F_axis.
  if (weights_.flux > 0)
    for (const auto& e : fluxes_) columns.push_back(e.at(axis_).evaluate(env));
  if (weights_.gradient > 0)
    for (int f = 0; f < fields_; ++f) columns.push_back(env.derivatives.at({f, {axis_}}));
  return torch::stack(columns, 1);
}

torch::Tensor InterfaceSide::local_values(const FieldEvaluator& fields, bool create_graph,
                                          const Chunk& chunk) const {
  const auto r = request(fields, chunk);
  return values_from(fields.evaluate(r.x, r.keys, create_graph));
}

std::vector<InterfaceSide::TermColumns> InterfaceSide::term_columns() const {
  const Layout layout = this->layout();
  // A cut in time: information flows forward only. The later side takes the earlier side's
  // values as its initial data (the full jump); the earlier side does not feel the later one,
  // which would otherwise pull its solution toward a later slab that has not converged.
  const bool time_cut = axis_ >= spatial_dims_;
  std::vector<TermColumns> terms;
  if (time_cut && side_ == 0) return terms;
  // Solution average (XPINN): u - (u + u_other)/2 = (u - u_other)/2; across time u - u_earlier.
  if (weights_.continuity > 0)
    terms.push_back({continuity_term, 0, layout.fields, time_cut ? 1.0 : 0.5});
  if (layout.residuals)
    terms.push_back({residual_term, layout.residual_start(), layout.residuals, 1.0});
  if (layout.fluxes) terms.push_back({flux_term, layout.flux_start(), layout.fluxes, 1.0});
  if (layout.gradients)
    terms.push_back({gradient_term, layout.gradient_start(), layout.gradients, 1.0});
  return terms;
}

TermValue InterfaceSide::term(const char* name, torch::Tensor mean_square,
                              const torch::Tensor& jump, const Chunk& chunk) const {
  return replica_.term(name, std::move(mean_square), jump, points_.size(0), all_points_, chunk);
}

double InterfaceSide::share() const {
  return replica_.count > 1
             ? static_cast<double>(points_.size(0)) / static_cast<double>(all_points_)
             : 1.0;
}

std::vector<TermValue> InterfaceSide::losses(const torch::Tensor& local,
                                             const torch::Tensor& remote,
                                             const Chunk& chunk) const {
  const int64_t n = local.size(0);
  std::vector<TermValue> terms;
  for (const auto& t : term_columns()) {
    auto jump = (local.narrow(1, t.start, t.width) - remote.narrow(1, t.start, t.width)) * t.scale;
    auto loss = n ? jump.pow(2).sum(1).mean() : torch::zeros({}, local.options());
    terms.push_back(term(t.name, loss, jump, chunk));
  }
  return terms;
}

torch::Tensor InterfaceSide::squared_jump(const torch::Tensor& local,
                                          const torch::Tensor& remote) const {
  return (local.narrow(1, 0, fields_) - remote.narrow(1, 0, fields_))
      .pow(2)
      .sum()
      .to(torch::kFloat64);
}

}  // namespace tessera::physics
