#include "tessera/app/run_reporter.hpp"

#include "tessera/app/checkpointing.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/checkpoint_files.hpp"

namespace tessera::app {

RunReporter::RunReporter(const parallel::Communicator& comm, const Setup& setup,
                         const std::optional<train::RestoredCheckpoint>& restored, Console& console)
    : comm_(comm), setup_(setup), console_(console), progress_(console.out(), setup.plan.budget_s) {
  if (console.root())
    history_ = std::make_unique<io::HistoryWriter>(setup.input.output.directory + "/history.jsonl",
                                                   restored ? restored->position.iteration : -1);
}

train::TrainerCallbacks RunReporter::callbacks(Evaluator& evaluator, const nlohmann::json& identity,
                                               const nlohmann::json& run) {
  train::TrainerCallbacks callbacks;
  callbacks.errors = [&evaluator] { return evaluator.relative_errors(); };
  callbacks.on_checkpoint = [this, identity, run](train::CheckpointState& state) {
    const auto failure = write_checkpoint(comm_, setup_.input.output.directory, state, identity,
                                          run, setup_.decomposition.slices);
    const auto warning = checkpoint_failures_.record(state.position.iteration, failure);
    if (!warning.empty() && console_.root()) console_.warning(warning);
  };
  callbacks.on_log = [this](const train::LogRecord& record) {
    if (history_) history_->append(history_json(record));
    progress_.print(record);
  };
  callbacks.on_warning = [this](const std::string& text) { console_.warning(text); };
  return callbacks;
}

void RunReporter::report_stop(const train::Trainer& trainer, const CommandLine& line) {
  const auto failures = checkpoint_failures_.summary();
  if (!failures.empty() && console_.root()) console_.warning(failures);
  if (trainer.stop_reason().empty()) return;
  if (checkpoint_failures_.latest_failed_at(trainer.iterations_done())) {
    console_.out() << "tessera: stopped early (" << trainer.stop_reason() << ") at iteration "
                   << trainer.iterations_done()
                   << "; its checkpoint could not be written (see the warning above); continue "
                      "from the last complete one with: tessera run "
                   << line.case_file << " --restart latest\n";
    return;
  }
  console_.out() << "tessera: stopped early (" << trainer.stop_reason() << ") at iteration "
                 << trainer.iterations_done() << "; checkpoint written to "
                 << io::checkpoint_directory(setup_.input.output.directory,
                                             trainer.iterations_done())
                 << "; continue with: tessera run " << line.case_file << " --restart latest\n";
}

}  // namespace tessera::app
