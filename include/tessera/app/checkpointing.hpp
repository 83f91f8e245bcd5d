#pragma once
/// Checkpoint files of a run: the trainer's in-memory state written as
/// checkpoints/<iteration>/subdomain_<id>.pt, shared.pt and manifest.json, and read back for
/// `tessera run --restart latest` on any number of ranks.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/train/checkpoint_state.hpp"

namespace tessera::app {

/// Writes `state` under `output`: every rank its subdomains' archives, rank 0 the shared one;
/// after every rank has finished, rank 0 writes the manifest (with `identity`, what a restart
/// must match) and removes all but the 2 newest complete checkpoints. Collective over comm.
void write_checkpoint(const parallel::Communicator& comm, const std::string& output,
                      train::CheckpointState& state, const nlohmann::json& identity);

/// The checkpoint `which` names ("latest": the newest complete one under `output`; else a
/// checkpoint folder) read for the subdomains in `owned`, after checking that its identity
/// matches this run's. Errors say what is missing or different and how to go on.
train::RestoredCheckpoint read_checkpoint(const std::string& which, const std::string& output,
                                          const std::vector<int>& owned,
                                          const nlohmann::json& identity);

/// The checkpoint `line.restart` names, for this rank's subdomains (nullopt when the command
/// line asks for none); rank 0 says where the run continues. Errors say what is missing or
/// different and how to go on.
std::optional<train::RestoredCheckpoint> restore_checkpoint(const CommandLine& line,
                                                            const Setup& setup,
                                                            const RankModels& rank,
                                                            const nlohmann::json& identity,
                                                            Console& console);

}  // namespace tessera::app
