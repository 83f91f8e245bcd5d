#pragma once
/// How a run reports while it trains: history.jsonl and the progress line on rank 0, warnings
/// from any rank, checkpoints on every rank, and the message when it stops early.
#include <memory>
#include <optional>
#include <string>

#include "tessera/app/checkpoint_failures.hpp"
#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/io/json_files.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

class RunReporter {
 public:
  /// Starts history.jsonl on rank 0 (after the restored iteration, when continuing).
  RunReporter(const parallel::Communicator& comm, const Setup& setup,
              const std::optional<train::RestoredCheckpoint>& restored, Console& console);

  /// The trainer's callbacks: errors from `evaluator`, checkpoints with `identity` and the
  /// run's record `run` (RunClaim::record), log records to the history and the console,
  /// warnings to the console. The reporter and the evaluator must outlive the trainer.
  train::TrainerCallbacks callbacks(Evaluator& evaluator, const nlohmann::json& identity,
                                    const nlohmann::json& run);

  /// After training: how many checkpoints could not be written, when more than one; and when
  /// training stopped early, where the checkpoint is and how to continue.
  void report_stop(const train::Trainer& trainer, const CommandLine& line);

 private:
  parallel::Communicator comm_;
  const Setup& setup_;
  Console& console_;
  std::unique_ptr<io::HistoryWriter> history_;  ///< rank 0 only
  ProgressPrinter progress_;
  CheckpointFailures checkpoint_failures_;
};

}  // namespace tessera::app
