#pragma once
/// The end of a run: the fields on the output grid or mesh, and run.json (the effective case,
/// versions, times, final figures and synchronisation counts).
#include <string>

#include "tessera/app/evaluation.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

/// The exit status of a run that stopped early (signal, time limit) with a checkpoint to continue
/// from: EX_TEMPFAIL of sysexits.h, "try again later". Job scripts test it to requeue.
inline constexpr int exit_stopped = 75;

/// The exit status of a run that ended because one of its result files could not be written
/// (a full disk, a quota: io::WriteError): EX_IOERR of sysexits.h. Its checkpoints are kept;
/// once there is room, --restart latest continues and writes the output.
inline constexpr int exit_write_failed = 74;

/// Seconds that a stop signal may wait during training for the next log iteration (where every
/// rank agrees to stop and writes a checkpoint) before the watchdog ends the run with the
/// newest complete checkpoint instead; Slurm sends SIGKILL 30 s after SIGTERM by default.
inline constexpr double stop_grace_s = 5.0;
/// The same for SIGUSR1, the warning a batch system sends minutes before the end (Slurm's
/// --signal=B:USR1@300 in tools/slurm/tessera.sbatch): long enough for a slow log interval.
inline constexpr double warning_grace_s = 240.0;

/// What a checkpoint must match to continue this run (the rank count need not).
nlohmann::json checkpoint_identity(const Setup& setup);

/// Creates (rank 0) and checks the output folder before training, so that a bad one fails in
/// seconds, not after hours. Collective over comm.
void prepare_output_directory(const parallel::Communicator& comm, const std::string& directory);

/// Rank 0: sets disk space aside for the last rewrite of run.json (io::reserve_json_room), so
/// that a run which fails for lack of space can still record "failed". Best effort.
void reserve_run_record_room(const std::string& output);

/// Writes the output file (every rank its part) and, on rank 0, run.json (the run's `record`,
/// RunClaim::record, with the outcome); returns the path of the XDMF file to open in ParaView.
/// Throws io::WriteError on every rank when the output cannot be written, saying how to write
/// it later. Collective over comm.
std::string write_results(const parallel::Communicator& comm, const Setup& setup,
                          const train::Trainer& trainer, Evaluator& evaluator,
                          const RankLinks& links, const nlohmann::json& record);

}  // namespace tessera::app
