#pragma once
/// Checkpoint files of a run: the trainer's in-memory state written as
/// checkpoints/<iteration>/subdomain_<id>.pt, shared.pt and manifest.json, and read back for
/// `tessera run --restart latest` on any number of ranks.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/app/console.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/train/checkpoint_state.hpp"

namespace tessera::app {

/// Writes `state` under `output`: every rank its subdomains' archives, rank 0 the shared one;
/// after every rank has finished, rank 0 writes the manifest (with `identity`, what a restart
/// must match, `run`, the run's id and case, and every file's size and checksum, gathered from
/// the ranks that wrote them) and removes this run's checkpoints but the 2 newest intact ones.
/// Collective over comm. A file that cannot be written (a full disk) leaves no checkpoint: every
/// rank removes the files it wrote for it and rank 0 the folder. Returns what happened, on
/// every rank, for a warning; "" when the checkpoint is complete.
/// `slices`: the fbpinn slices of the points the run sums over (0 for the other methods),
/// recorded so that a continuation can say when it sums over other slices.
std::string write_checkpoint(const parallel::Communicator& comm, const std::string& output,
                             train::CheckpointState& state, const nlohmann::json& identity,
                             const nlohmann::json& run, int slices = 0);

/// The checkpoint folder `directory` read for the subdomains in `owned` onto `device` (the
/// rank's own, whatever device wrote the files), after checking that its identity matches this
/// run's. Errors say what is missing or different and how to go on.
train::RestoredCheckpoint read_checkpoint(const std::string& directory,
                                          const std::vector<int>& owned,
                                          const nlohmann::json& identity,
                                          const torch::Device& device);

/// The checkpoint folder `directory` for this rank's subdomains (nullopt when it is "": a fresh
/// run); rank 0 says where the run continues, and notes when the checkpoint was written with
/// other fbpinn slices than this run's `slices` (the sums are then grouped differently).
std::optional<train::RestoredCheckpoint> restore_checkpoint(const std::string& directory,
                                                            const RankModels& rank,
                                                            const nlohmann::json& identity,
                                                            const torch::Device& device,
                                                            Console& console, int slices = 0);

}  // namespace tessera::app
