// Where the collocation points go: a stage's own count and the residual-based redistribution.
//
// One network redistributing its points by the residual sends most of them wherever the
// residual is large, a shock for instance. Split into subdomains that each keep a fixed count,
// the subdomain holding the shock could only move its own share there. So with several
// subdomains the draw acts as if over the whole domain: each subdomain's count becomes the share
// of the points the density |r|^k / mean(|r|^k) + c would give its region, the mean taken over
// the whole domain, and inside the subdomain the points follow the same density.
#include <cmath>

#include "tessera/core/host_reads.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/physics/equation_group.hpp"
#include "tessera/train/point_placement.hpp"

namespace tessera::train {
namespace {

physics::EquationGroup* equation_group(SubdomainModel& model) {
  for (auto& group : model.groups)
    if (auto* equations = dynamic_cast<physics::EquationGroup*>(group.get())) return equations;
  return nullptr;
}

/// Uniform redraws of every group (`equations` false: but the equation groups, whose points
/// are redistributed by their residual instead) and of the interface points: fixed interface
/// points would let neighbours agree at those points only.
void resample_all(const std::vector<SubdomainModel*>& owned, bool equations) {
  for (auto* s : owned) {
    for (auto& group : s->groups)
      if (equations || !dynamic_cast<physics::EquationGroup*>(group.get())) group->resample();
    for (auto& side : s->interfaces) side->resample();
  }
}

}  // namespace

namespace {

bool every(int64_t interval, int64_t k) { return interval > 0 && k > 0 && k % interval == 0; }

}  // namespace

void PointPlacement::before_adam_step(int64_t k) {
  const auto& adaptive = plan_.adaptive_points;
  if (every(plan_.resample_every, k)) resample_all(owned_, /*equations=*/!adaptive);
  if (adaptive && every(adaptive->every, k)) adapt_points();
}

bool PointPlacement::redraws_at(int64_t k) const {
  const auto& adaptive = plan_.adaptive_points;
  return every(plan_.resample_every, k) || (adaptive && every(adaptive->every, k));
}

void PointPlacement::apply_stage_points(const StagePlan& stage) {
  if (!stage.points) return;
  // Only the collocation (equation) groups follow a stage's point count. With residual-based
  // points the new sample is drawn by the residual too: a uniform redraw would undo the
  // concentration the earlier stages built, just before the finish that resolves it.
  for (auto* s : owned_)
    for (auto& group : s->groups)
      if (auto* equations = dynamic_cast<physics::EquationGroup*>(group.get())) {
        equations->set_point_count(*stage.points);
        if (!plan_.adaptive_points) group->resample();
      }
  if (plan_.adaptive_points) adapt_points();
}

void PointPlacement::adapt_points() {
  const auto& rule = *plan_.adaptive_points;
  if (reduction_.subdomains() == 1 || !rule.across_subdomains) {
    for (auto* s : owned_)
      if (auto* equations = equation_group(*s)) equations->adapt(*s->fields, rule);
    return;
  }
  // Per subdomain: the integral of |r|^k over it (its measure times the candidates' mean), its
  // measure, its configured point count and how many candidates it drew.
  constexpr std::size_t width = 4;
  std::vector<physics::ResidualCandidates> drawn(owned_.size());
  std::vector<std::vector<double>> figures(owned_.size(), std::vector<double>(width, 0.0));
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto* equations = equation_group(*owned_[i]);
    if (!equations) continue;
    drawn[i] = equations->candidates(*owned_[i]->fields, rule);
    const auto& magnitude = drawn[i].magnitude;
    const double mean =
        magnitude.numel() ? core::read_double(magnitude.abs().pow(rule.exponent).mean()) : 0.0;
    figures[i] = {equations->measure() * mean, equations->measure(),
                  static_cast<double>(equations->configured_points()),
                  static_cast<double>(magnitude.numel())};
  }
  const auto job = reduction_.subdomain_figures(figures, width);
  double power = 0, measure = 0;
  int64_t total = 0;
  std::vector<double> powers, measures;
  std::vector<int64_t> counts, caps;
  for (int s = 0; s < reduction_.subdomains(); ++s) {
    const double* f = &job[static_cast<std::size_t>(s) * width];
    powers.push_back(f[0]);
    measures.push_back(f[1]);
    counts.push_back(std::llround(f[2]));
    caps.push_back(std::llround(f[3]));
    power += f[0], measure += f[1], total += counts.back();
  }
  // A residual that vanishes everywhere leaves every subdomain its count, drawn uniformly.
  if (power > 0 && measure > 0)
    counts = physics::share_points(total, powers, measures, caps, rule.constant);
  const double mean_power = measure > 0 ? power / measure : 0.0;
  for (std::size_t i = 0; i < owned_.size(); ++i) {
    auto* equations = equation_group(*owned_[i]);
    if (!equations) continue;
    equations->keep(drawn[i], physics::residual_density(drawn[i].magnitude, rule, mean_power),
                    counts.at(owned_[i]->id));
  }
}

}  // namespace tessera::train
