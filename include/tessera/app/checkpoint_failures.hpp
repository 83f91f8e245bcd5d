#pragma once
/// The checkpoints of a run that could not be written (a full disk, a quota), kept so that a
/// disk that stays full costs one warning and one count instead of a warning per checkpoint
/// (docs/troubleshooting.md, "Restarts").
#include <cstdint>
#include <string>

namespace tessera::app {

class CheckpointFailures {
 public:
  /// Records the outcome of the checkpoint at `iteration`: `failure` is write_checkpoint's
  /// result ("" when it was written). Returns the warning to give now: the failure itself when it
  /// is the run's first, else "".
  std::string record(int64_t iteration, const std::string& failure);

  /// The line for the end of the run when more than one checkpoint failed (how many, the first
  /// and the last iteration), else "".
  std::string summary() const;

  /// Whether the latest checkpoint recorded is the one at `iteration` and it failed.
  bool latest_failed_at(int64_t iteration) const { return latest_failed_ == iteration; }

 private:
  int64_t count_ = 0;
  int64_t first_ = -1;          ///< iteration of the first failure
  int64_t last_ = -1;           ///< iteration of the last failure
  int64_t latest_failed_ = -1;  ///< iteration of the latest checkpoint when it failed, else -1
};

}  // namespace tessera::app
