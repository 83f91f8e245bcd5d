#pragma once
/// Where checkpoints live and which one counts (docs/output-format.md, "Checkpoints"):
/// <output>/checkpoints/<iteration>/ holds subdomain_<id>.pt files, shared.pt and, written
/// last, manifest.json. A folder without a manifest is an interrupted write and never counts.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::io {

/// <output>/checkpoints/<iteration as 8 digits>.
std::string checkpoint_directory(const std::string& output, int64_t iteration);

/// The newest folder under <output>/checkpoints with a manifest.json, or "" when there is none.
std::string latest_checkpoint(const std::string& output);

/// The manifest of a checkpoint folder; errors name the folder and say what is missing.
nlohmann::json read_manifest(const std::string& directory);

/// Writes the manifest (atomically: temporary name, then rename), making the checkpoint count.
void write_manifest(const std::string& directory, const nlohmann::json& manifest);

/// Deletes the checkpoint folders older than the newest `keep` complete ones that belong to the
/// run `run_id` (its manifest says so) or are interrupted writes (no manifest). Never touches
/// the newest complete ones, so a failing write leaves a good checkpoint, and never another
/// run's.
void prune_checkpoints(const std::string& output, int keep, const std::string& run_id);

/// Moves the checkpoint folders after `iteration` (complete or not) into the folder `into`,
/// so that a run continued from an earlier checkpoint neither takes them for its own newest
/// nor prunes its new ones against them; returns their names, oldest first.
std::vector<std::string> set_aside_checkpoints_after(const std::string& output, int64_t iteration,
                                                     const std::string& into);

/// The run id in a checkpoint's manifest (its "run" record; "" when it has none: written
/// before runs had ids).
std::string checkpoint_run_id(const std::string& directory);

}  // namespace tessera::io
