#include "tessera/app/budget_plan.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>

#include "tessera/app/model.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {
namespace {

// The timing runs this many iterations of each stage, with a log iteration every
// `probe_log_every` (a log iteration costs more than a plain one, and a run has one in every
// hundred), and measures Adam after its first `probe_adam_skipped`, which pay for set-up.
constexpr int64_t probe_adam_iterations = 32;
constexpr int64_t probe_adam_skipped = 16;
constexpr int64_t probe_finish_iterations = 8;
constexpr int64_t probe_log_every = 8;

/// Times the two stages on a separate copy of this rank's models (built from the case as the
/// run's own are, so the run's networks and points are untouched). Every rank gets the slowest
/// rank's figures, so all plan the same iterations.
StageSpeeds measure_stage_speeds(const parallel::Communicator& comm, const Setup& setup,
                                 Console& console) {
  RankModels rank = build_rank_models(comm, setup, console);
  RankLinks links = link_ranks(comm, setup, rank);
  train::TrainingPlan plan = setup.plan;
  plan.stages.at(0).iterations = probe_adam_iterations;
  plan.stages.at(1).iterations = probe_finish_iterations;
  plan.log_every = probe_log_every;
  plan.checkpoint_every = 0;
  plan.time_limit.reset();
  std::map<int64_t, double> wall;  // iteration -> seconds since training started
  train::TrainerCallbacks callbacks;
  callbacks.on_log = [&wall](const train::LogRecord& r) { wall[r.iteration] = r.wall_s; };
  train::Trainer trainer(training_job(comm, setup, rank, links), plan, callbacks);
  trainer.run();
  // The trainer ends in the finishing phase; the run's own set-up follows.
  core::set_run_phase(core::RunPhase::setup);
  const int64_t end = probe_adam_iterations + probe_finish_iterations;
  TESSERA_CHECK(wall.count(probe_adam_iterations) && wall.count(end),
                "training.budget: the timing of the stages stopped early ("
                    << (trainer.stop_reason().empty() ? "no record" : trainer.stop_reason())
                    << "); run again");
  std::vector<double> seconds{(wall.at(probe_adam_iterations) - wall.at(probe_adam_skipped)) /
                                  static_cast<double>(probe_adam_iterations - probe_adam_skipped),
                              (wall.at(end) - wall.at(probe_adam_iterations)) /
                                  static_cast<double>(probe_finish_iterations)};
  comm.max_in_place(seconds);
  return {seconds[0], seconds[1]};
}

std::string seconds_text(double s) {
  std::ostringstream text;
  text << std::setprecision(3) << (s < 1 ? s * 1e3 : s) << (s < 1 ? " ms" : " s");
  return text.str();
}

void print_plan(Console& console, const Setup& setup, const PlannedIterations& planned) {
  const auto& stages = setup.plan.stages;
  console.out() << "tessera: plan for training.budget " << *setup.input.training.budget
                << " s: " << planned.adam << " " << stages.at(0).optimizer << " iterations, then "
                << stages.at(1).optimizer << " until the budget ends (at most " << planned.finish
                << " iterations)\n";
  if (console.root() && (planned.adam < 100 || planned.finish < 10 * finish_headroom)) {
    std::ostringstream text;
    text << "training.budget " << *setup.input.training.budget << " s leaves only " << planned.adam
         << " Adam and about " << planned.finish / finish_headroom
         << " finish iterations on this job; give a larger budget for a useful result";
    console.warning(text.str());
  }
}

}  // namespace

PlannedIterations plan_iterations(double budget_s, const StageSpeeds& speeds) {
  const auto count = [](double seconds, double per_iteration) {
    const double n = std::floor(seconds * budget_margin / std::max(per_iteration, 1e-9));
    return static_cast<int64_t>(std::clamp(n, 1.0, 1e12));
  };
  return {count(budget_s * budget_adam_share, speeds.adam_s),
          finish_headroom * count(budget_s * (1 - budget_adam_share), speeds.finish_s)};
}

void apply_plan(Setup& setup, const PlannedIterations& planned) {
  auto& stages = setup.plan.stages;
  TESSERA_ASSERT(stages.size() == 2, "a budget plans two stages, not " << stages.size());
  stages[0].iterations = planned.adam;
  stages[0].decay_every = default_decay_every(planned.adam);
  stages[0].warmup = default_warmup(planned.adam);
  stages[1].iterations = planned.finish;
  setup.plan.budget_s = setup.input.training.budget;
  auto& specs = setup.input.training.stages;
  specs.at(0).iterations = planned.adam;
  specs.at(1).iterations = planned.finish;
  setup.input.training.planned = true;
}

nlohmann::json plan_record(const Setup& setup, const PlannedIterations& planned,
                           const StageSpeeds& speeds) {
  const auto& stages = setup.plan.stages;
  return {{"budget_s", *setup.input.training.budget},
          {"adam_share", budget_adam_share},
          {"stages",
           {{{"optimizer", stages.at(0).optimizer}, {"iterations", planned.adam}},
            {{"optimizer", stages.at(1).optimizer}, {"iterations", planned.finish}}}},
          {"seconds_per_iteration", {speeds.adam_s, speeds.finish_s}}};
}

PlannedIterations recorded_plan(const nlohmann::json& manifest, const std::string& directory) {
  const auto* run = manifest.contains("run") ? &manifest["run"] : nullptr;
  const bool has = run && run->contains("plan") && (*run)["plan"].contains("stages") &&
                   (*run)["plan"]["stages"].is_array() && (*run)["plan"]["stages"].size() == 2;
  TESSERA_CHECK(has, "checkpoint '" << directory
                                    << "' records no plan of training.budget (run.plan); it was "
                                       "written by a run with stages: restart with those stages, "
                                       "or start again with --overwrite");
  const auto& stages = (*run)["plan"]["stages"];
  return {stages[0].value("iterations", int64_t{1}), stages[1].value("iterations", int64_t{1})};
}

void plan_from_budget(const parallel::Communicator& comm, Setup& setup, RunClaim& claim,
                      Console& console) {
  if (!setup.input.training.budget) return;
  StageSpeeds speeds;
  std::vector<double> figures(4, 0.0);  // adam, finish iterations; their speeds
  if (!claim.restart.empty()) {
    if (comm.rank() == 0) {
      const auto manifest = io::read_manifest(claim.restart);
      const auto planned = recorded_plan(manifest, claim.restart);
      const auto& seconds =
          manifest["run"]["plan"].value("seconds_per_iteration", nlohmann::json::array({0.0, 0.0}));
      figures = {static_cast<double>(planned.adam), static_cast<double>(planned.finish),
                 seconds.at(0).get<double>(), seconds.at(1).get<double>()};
    }
    comm.max_in_place(figures);
    speeds = {figures[2], figures[3]};
    console.out() << "tessera: continuing the plan recorded in " << claim.restart << "\n";
  } else {
    const auto& stages = setup.plan.stages;
    console.out() << "tessera: timing " << probe_adam_iterations << " " << stages.at(0).optimizer
                  << " and " << probe_finish_iterations << " " << stages.at(1).optimizer
                  << " iterations to plan training.budget\n";
    speeds = measure_stage_speeds(comm, setup, console);
    const auto planned = plan_iterations(*setup.input.training.budget, speeds);
    figures = {static_cast<double>(planned.adam), static_cast<double>(planned.finish),
               speeds.adam_s, speeds.finish_s};
    console.out() << "tessera: " << seconds_text(speeds.adam_s) << " per " << stages.at(0).optimizer
                  << " iteration, " << seconds_text(speeds.finish_s) << " per "
                  << stages.at(1).optimizer << " iteration\n";
  }
  const PlannedIterations planned{static_cast<int64_t>(figures[0]),
                                  static_cast<int64_t>(figures[1])};
  apply_plan(setup, planned);
  print_plan(console, setup, planned);
  if (comm.rank() == 0) claim.record["plan"] = plan_record(setup, planned, speeds);
}

void record_trained_plan(RunClaim& claim, int64_t iterations_done) {
  if (!claim.record.contains("plan")) return;
  auto& finish = claim.record["plan"]["stages"][1];
  const int64_t adam = claim.record["plan"]["stages"][0].value("iterations", int64_t{0});
  finish["bound"] = finish.value("iterations", int64_t{0});
  finish["iterations"] = std::max<int64_t>(0, iterations_done - adam);
}

}  // namespace tessera::app
