#pragma once
/// One output folder, one run: before training, rank 0 locks the folder, looks at what it
/// already holds, and decides with the command line whether this run starts fresh, continues a
/// checkpoint, or stops with a message (docs/output-format.md, "Runs and output folders").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/io/output_lock.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

/// This run's hold on its output folder.
struct RunClaim {
  std::optional<io::OutputLock> lock;  ///< rank 0 only; released when the claim goes
  /// The checkpoint folder to continue from, on every rank ("" to start fresh).
  std::string restart;
  /// Rank 0: what identifies the run in run.json and in every checkpoint manifest: run_id
  /// (kept across restarts), case_hash, case (the effective document), case_file, started.
  nlohmann::json record;
};

/// Locks the output folder (rank 0), refuses a folder that another run is using or whose results
/// belong to another run, resolves --restart (latest, auto or a folder) and checks that the
/// checkpoint's case differs from this one only in keys that cannot change the past; clears
/// the folder for --overwrite; writes run.json with status "running". Collective over comm;
/// errors are thrown on rank 0 and name the folder and the choices.
RunClaim claim_output_folder(const parallel::Communicator& comm, const Setup& setup,
                             const CommandLine& line, Console& console);

/// Rank 0: when the stop watchdog ends the process (a signal that training could not act on in
/// time, or one during set-up), run.json says "stopped" with the signal, the phase and the
/// newest complete checkpoint of this run, if any.
void record_forced_stops(const RunClaim& claim, const std::string& output);

/// Rank 0: run.json for a run that ends with `message` (status "failed"). Never throws.
void record_failure(const RunClaim& claim, const std::string& output, const std::string& message);

/// A hex digest of the effective case document (FNV-1a, 64 bits, of its compact JSON).
std::string case_hash(const nlohmann::json& effective);

/// "path: before -> now" for every key whose value differs between two effective cases,
/// except the keys that cannot change a run's past: output.*, device, training.log_every,
/// training.checkpoint_every, training.time_limit, decomposition.ranks_per_subdomain and
/// decomposition.balance, the last stage's iterations, and the
/// schedule (iterations, lr, decay, warmup, clip) of stage `open_stage` (the one a checkpoint
/// continues) and later stages, as long as the open stage keeps at least the `steps_done` it
/// has already taken.
std::vector<std::string> case_differences(const nlohmann::json& before, const nlohmann::json& now,
                                          int64_t open_stage, int64_t steps_done = 0);

}  // namespace tessera::app
