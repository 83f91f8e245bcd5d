// `tessera run`: the steps of a training run, in order. Each step is a function with its own
// header; this file is the table of contents.
#include "tessera/app/checkpointing.hpp"
#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/run_reporter.hpp"
#include "tessera/app/run_results.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/device_map.hpp"

namespace tessera::app {

int run_command(const CommandLine& line) {
  // 1. SIGTERM / SIGUSR1 (Slurm's warning) stop at the next log iteration with a checkpoint.
  core::install_stop_handlers();
  const auto comm = parallel::Communicator::world();
  Console console(comm.rank() == 0);
  const std::string started = utc_now();

  // 2. The case, the problem, the decomposition and the plan; a bad output folder fails now.
  const Setup setup = prepare(load(line), comm.size(), parallel::node_local_rank(comm));
  const auto& c = setup.input;
  prepare_output_directory(comm, c.output.directory);
  console.log_to(c.output.directory + "/tessera.log");

  // 3. This rank's subdomains, their links to other ranks, and the evaluator of errors/output.
  RankModels rank = build_rank_models(comm, setup);
  RankLinks links = link_ranks(comm, setup, rank);
  note_idle_ranks(console, setup, rank);
  Evaluator evaluator = make_evaluator(comm, setup, rank);

  // 4. A checkpoint to continue from, when asked.
  const auto identity = checkpoint_identity(setup);
  auto restored = restore_checkpoint(line, setup, rank, identity, console);

  // 5. Train, reporting at log iterations.
  RunReporter reporter(comm, setup, restored, console);
  train::TrainerCallbacks callbacks = reporter.callbacks(evaluator, identity);
  train::Trainer trainer(comm, rank.owned(), setup.decomposition.partition.size(),
                         setup.problem.term_names, setup.plan, callbacks, links.exchange.get(),
                         links.sync);
  if (console.root()) print_problem_summary(console.out(), setup, check_models(setup));
  if (restored) trainer.resume(std::move(*restored));
  trainer.run();
  reporter.report_stop(trainer, line);
  print_timing_table(comm, trainer.last_record(), console.out());

  // 6. Fields and run.json.
  const std::string xmf = write_results(comm, setup, trainer, evaluator, links, started);
  console.out() << "tessera: wrote " << xmf << " (open it in ParaView)\n";
  return trainer.stop_reason().empty() ? 0 : exit_stopped;
}

}  // namespace tessera::app
