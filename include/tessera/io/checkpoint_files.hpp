#pragma once
/// Where checkpoints live and which one counts (docs/output-format.md, "Checkpoints"):
/// <output>/checkpoints/<iteration>/ holds subdomain_<id>.pt files, shared.pt and, written
/// last, manifest.json. A folder without a manifest is an interrupted write and never counts;
/// one whose files differ from what the manifest records of them is damaged and never counts.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tessera/io/checksum.hpp"

namespace tessera::io {

/// <output>/checkpoints/<iteration as 8 digits>.
std::string checkpoint_directory(const std::string& output, int64_t iteration);

/// The newest folder under <output>/checkpoints with a manifest.json, or "" when there is none.
/// Its files are not checked: see newest_intact_checkpoint for a checkpoint to continue from.
std::string latest_checkpoint(const std::string& output);

/// What the manifest records of one file of a checkpoint ("files": {"<name>": this}):
/// {"bytes": N, "fnv1a64": "<16 hex digits>"}.
nlohmann::json file_record(const Fnv1a64& written);

/// How much of a checkpoint's files checkpoint_damage reads: only their sizes (a stat per file),
/// or every byte for the checksums.
enum class CheckDepth { sizes, checksums };

/// Why the checkpoint folder `directory`, which has a manifest, cannot be continued from, or ""
/// when it is intact: a file its manifest lists is missing, has another size ("subdomain_0.pt:
/// 1234 bytes, the manifest says 5678") or, with CheckDepth::checksums, another checksum; or
/// the manifest itself is unreadable. Manifests written before checksums list no files and
/// count as intact.
std::string checkpoint_damage(const std::string& directory,
                              CheckDepth depth = CheckDepth::checksums);

struct DamagedCheckpoint {
  std::string directory;
  std::string reason;  ///< checkpoint_damage's
};

struct IntactCheckpoint {
  std::string directory;                   ///< "" when no checkpoint is complete and intact
  std::vector<DamagedCheckpoint> skipped;  ///< the damaged ones newer than it, newest first
};

/// The newest checkpoint under <output>/checkpoints that is complete (a manifest) and intact
/// (every checksum verified), and the damaged ones it passed over on the way.
IntactCheckpoint newest_intact_checkpoint(const std::string& output);

/// The manifest of a checkpoint folder; errors name the folder and say what is missing.
nlohmann::json read_manifest(const std::string& directory);

/// Writes the manifest (atomically: temporary name, then rename), making the checkpoint count.
void write_manifest(const std::string& directory, const nlohmann::json& manifest);

/// Deletes the checkpoint folders older than the newest `keep` complete and intact ones that
/// belong to the run `run_id` (its manifest says so) or are interrupted writes (no manifest).
/// Never touches the newest intact ones, so a failing write or a damaged file leaves a good
/// checkpoint, and never another run's. Intact here means every file has the size its manifest
/// records (CheckDepth::sizes): reading every checkpoint back after each write would stall the
/// run for minutes where checkpoints hold gigabytes, and a truncated file, the usual damage,
/// shows in its size.
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
