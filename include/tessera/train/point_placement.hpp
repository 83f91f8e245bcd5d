#pragma once
/// Where the collocation points go during training: uniform redraws, a stage's own point count,
/// and the redistribution by the residual (within a subdomain, and across subdomains by their
/// share of the residual over the whole domain).
#include <cstdint>
#include <vector>

#include "tessera/train/plan.hpp"
#include "tessera/train/reduction.hpp"
#include "tessera/train/subdomain_model.hpp"

namespace tessera::train {

class PointPlacement {
 public:
  PointPlacement(std::vector<SubdomainModel*> owned, const TrainingPlan& plan, Reduction& reduction)
      : owned_(std::move(owned)), plan_(plan), reduction_(reduction) {}

  /// A stage's own point count, drawn at once (by the residual when that is on). Collective.
  void apply_stage_points(const StagePlan& stage);
  /// Before Adam iteration `stage_step`: the redraws and redistributions due then. Collective.
  void before_adam_step(int64_t stage_step);
  /// Whether before_adam_step(`stage_step`) redraws or redistributes anything.
  bool redraws_at(int64_t stage_step) const;

 private:
  /// Redistributes every owned subdomain's collocation points by the residual; with several
  /// subdomains (and `across_subdomains`) their counts follow their share of the residual over
  /// the job, the total kept. Collective.
  void adapt_points();

  std::vector<SubdomainModel*> owned_;
  const TrainingPlan& plan_;
  Reduction& reduction_;
};

}  // namespace tessera::train
