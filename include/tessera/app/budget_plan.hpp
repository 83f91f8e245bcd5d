#pragma once
/// A case with `training.budget` instead of stages: the run times a few iterations of an Adam
/// stage and of the quasi-Newton finish on this job, fixes Adam's iterations for its share of
/// the budget, and trains the finish until the budget ends. The plan is recorded in run.json
/// and in every checkpoint manifest ("plan"), so a restart continues the same plan, and the
/// stages it records, written into a case, reproduce the run.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tessera/app/console.hpp"
#include "tessera/app/run_folder.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

/// Seconds per iteration of the two stages on this job.
struct StageSpeeds {
  double adam_s = 0;
  double finish_s = 0;
};

/// Share of the budget given to Adam; the finish has the rest. The finish does most of the
/// reduction of the error, from a start that Adam has brought near a solution.
constexpr double budget_adam_share = 0.3;
/// Fraction of Adam's share that its iterations are planned to take: the rest absorbs log
/// iterations (errors on the output grid), weight balancing and point redraws, which the
/// timing leaves out. (The finish's bound takes the same fraction of its share, times
/// `finish_headroom`.)
constexpr double budget_margin = 0.85;

/// The finish runs until the budget ends; its iterations are bounded by this many times what
/// the timing predicts (its first iterations, from a barely trained network, take several times
/// the line-search evaluations of later ones, so the timing overestimates them).
constexpr int64_t finish_headroom = 10;

struct PlannedIterations {
  int64_t adam = 1;
  int64_t finish = 1;
};

/// Iterations of Adam for its share of a budget of `budget_s` seconds at `speeds`, and the
/// bound on the finish's (at least 1 each).
PlannedIterations plan_iterations(double budget_s, const StageSpeeds& speeds);

/// Sets the iteration counts of the two stages, the Adam schedule that follows from them
/// (warm-up and decay, as for a stage with that many iterations) and the budget that ends the
/// finish, in `setup`.
void apply_plan(Setup& setup, const PlannedIterations& planned);

/// What run.json and the checkpoint manifests record of the plan.
nlohmann::json plan_record(const Setup& setup, const PlannedIterations& planned,
                           const StageSpeeds& speeds);

/// The iterations of the plan that the checkpoint manifest `manifest` (of folder `directory`)
/// records; throws naming the folder when it records none.
PlannedIterations recorded_plan(const nlohmann::json& manifest, const std::string& directory);

/// After training, for a case with a budget: the finish iterations the run trained, in place of
/// the bound (rank 0's record).
void record_trained_plan(RunClaim& claim, int64_t iterations_done);

/// For a case with a budget (nothing otherwise): takes the plan of the checkpoint being
/// continued, or times the stages on a separate copy of this rank's models, which the run then
/// builds afresh; applies it to `setup`, prints it and adds it to `claim.record`. Collective.
void plan_from_budget(const parallel::Communicator& comm, Setup& setup, RunClaim& claim,
                      Console& console);

}  // namespace tessera::app
