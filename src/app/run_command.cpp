// `tessera run`: the steps of a training run, in order. Each step is a function with its own
// header; this file is the table of contents.
#include <cstdio>

#include "tessera/app/budget_plan.hpp"
#include "tessera/app/checkpointing.hpp"
#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/device_check.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/run_folder.hpp"
#include "tessera/app/run_reporter.hpp"
#include "tessera/app/run_results.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/app/warm_start.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/memory_usage.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/write_error.hpp"
#include "tessera/parallel/device_map.hpp"

namespace tessera::app {
namespace {

int train_and_write(const parallel::Communicator& comm, Setup& setup, RunClaim& claim,
                    const WarmStart& warm_start, const CommandLine& line, Console& console) {
  // 3. Without stages, their iterations planned from training.budget; then this rank's
  //    subdomains, their links to other ranks, and the evaluator of errors/output.
  plan_from_budget(comm, setup, claim, console);
  RankModels rank = build_rank_models(comm, setup, console);
  apply_warm_start(warm_start, rank, setup.problem.device, console);
  RankLinks links = link_ranks(comm, setup, rank);
  note_idle_ranks(console, setup, rank);
  if (console.root()) warn_partial_interfaces(console, setup);
  Evaluator evaluator = make_evaluator(comm, setup, rank);
  for (const auto& field : evaluator.fields_without_relative_error())
    if (console.root())
      console.warning("the " + std::string(setup.problem.reference ? "reference" : "exact") + " " +
                      field + " is zero at every point where errors are measured, so " + "rel_l2(" +
                      field + ") is undefined and not reported; " + field +
                      "_error in the output file holds the pointwise error where it is known");

  // 4. The checkpoint to continue from, when the claim found one.
  const auto identity = checkpoint_identity(setup);
  auto restored = restore_checkpoint(claim.restart, rank, identity, setup.problem.device, console,
                                     setup.decomposition.slices);

  // 5. Train, reporting at log iterations.
  RunReporter reporter(comm, setup, restored, console);
  train::TrainerCallbacks callbacks = reporter.callbacks(evaluator, identity, claim.record);
  train::Trainer trainer(training_job(comm, setup, rank, links), setup.plan, callbacks);
  if (console.root()) print_problem_summary(console.out(), setup, check_models(setup));
  if (restored) trainer.resume(std::move(*restored));
  core::set_run_phase(core::RunPhase::training);
  core::reset_peak_memory();
  trainer.run();
  core::set_run_phase(core::RunPhase::finishing);
  reporter.report_stop(trainer, line);
  if (trainer.stop_reason().empty()) record_trained_plan(claim, trainer.iterations_done());
  print_timing_table(comm, trainer.last_record(), console.out());

  // 6. Fields and run.json.
  const std::string xmf = write_results(comm, setup, trainer, evaluator, links, claim.record);
  console.out() << "tessera: wrote " << xmf << " (open it in ParaView)\n";
  return trainer.stop_reason().empty() ? 0 : exit_stopped;
}

}  // namespace

int run_command(const CommandLine& line) {
  // 1. SIGTERM / SIGUSR1 (Slurm's warning) stop at the next log iteration with a checkpoint;
  //    in set-up at once, and in training after a grace period if no log iteration came.
  //    Rank 0 goes first, so that it records the stop before the launcher ends the others.
  const auto comm = parallel::Communicator::world();
  core::install_stop_handlers();
  const double later = comm.rank() == 0 ? 0.0 : 2.0;
  core::start_stop_watchdog(stop_grace_s + later, warning_grace_s + later, later, exit_stopped);
  if (comm.rank() == 0)
    core::set_forced_stop_action([](core::RunPhase) {
      std::fprintf(stderr, "tessera: %s during set-up: stopped before training\n",
                   core::stop_signal_name());
    });
  Console console(comm.rank() == 0);

  // 2. The case, the problem, the decomposition and the plan; then the output folder, locked
  //    for this run, checked against what it already holds, and the checkpoint to continue.
  Setup setup = prepare(load(line), comm.size(), parallel::node_local_rank(comm));
  check_devices(comm, setup, console);
  const auto& c = setup.input;
  // The networks of network.init.from, checked before the folder is claimed (a refused source
  // leaves nothing behind to --overwrite); a run continued from its own checkpoint has them.
  WarmStart warm_start;
  if (line.restart.empty()) warm_start = plan_warm_start(comm, setup);
  prepare_output_directory(comm, c.output.directory);
  RunClaim claim = claim_output_folder(comm, setup, line, console);
  if (claim.lock) reserve_run_record_room(c.output.directory);
  try {
    record_forced_stops(claim, c.output.directory);
    console.log_to(c.output.directory + "/tessera.log");
    // --restart auto that found no checkpoint starts fresh.
    if (!line.restart.empty() && claim.restart.empty()) warm_start = plan_warm_start(comm, setup);
    return train_and_write(comm, setup, claim, warm_start, line, console);
  } catch (const io::WriteError& e) {
    // A full disk or a quota: one line, its own exit status, and the checkpoints to go on from.
    console.log_error(comm.rank(), e.what());
    record_failure(claim, c.output.directory, e.what());
    parallel::Environment::abort_job(e.what(), exit_write_failed);
  } catch (const std::exception& e) {
    console.log_error(comm.rank(), e.what());
    record_failure(claim, c.output.directory, e.what());
    throw;
  }
}

}  // namespace tessera::app
