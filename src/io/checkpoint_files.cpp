#include "tessera/io/checkpoint_files.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/json_files.hpp"

namespace tessera::io {
namespace fs = std::filesystem;

namespace {

/// Checkpoint folders (named by iteration) under <output>/checkpoints, oldest first.
std::vector<std::pair<int64_t, fs::path>> checkpoint_folders(const std::string& output) {
  std::vector<std::pair<int64_t, fs::path>> folders;
  const fs::path root = fs::path(output) / "checkpoints";
  std::error_code error;
  if (!fs::is_directory(root, error)) return folders;
  for (const auto& entry : fs::directory_iterator(root, error)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    folders.emplace_back(std::stoll(name), entry.path());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

bool complete(const fs::path& folder) { return fs::is_regular_file(folder / "manifest.json"); }

/// What a manifest's "files" entry records of one file.
struct RecordedFile {
  uint64_t bytes = 0;
  std::string fnv1a64;
};

std::optional<RecordedFile> recorded_file(const nlohmann::json& entry) {
  if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
      !entry.contains("fnv1a64") || !entry["fnv1a64"].is_string())
    return std::nullopt;
  return RecordedFile{entry["bytes"].get<uint64_t>(), entry["fnv1a64"].get<std::string>()};
}

/// "<name>: <what differs>" when the file's size is not the recorded one, else "".
std::string size_damage(const fs::path& folder, const std::string& name,
                        const RecordedFile& expected) {
  std::error_code error;
  const uint64_t size = fs::file_size(folder / name, error);
  if (error) return name + ": " + error.message();
  if (size == expected.bytes) return "";
  return name + ": " + std::to_string(size) + " bytes, the manifest says " +
         std::to_string(expected.bytes);
}

/// "<name>: <what differs>" when the file's checksum is not the recorded one, else "".
std::string checksum_damage(const fs::path& folder, const std::string& name,
                            const RecordedFile& expected) {
  const auto hash = hash_file((folder / name).string());
  if (!hash) return name + ": cannot be read";
  if (hash->hex() == expected.fnv1a64) return "";
  return name + ": its FNV-1a 64 checksum is " + hash->hex() + ", the manifest says " +
         expected.fnv1a64;
}

}  // namespace

std::string checkpoint_directory(const std::string& output, int64_t iteration) {
  char name[32];
  std::snprintf(name, sizeof name, "%08lld", static_cast<long long>(iteration));
  return (fs::path(output) / "checkpoints" / name).string();
}

std::string latest_checkpoint(const std::string& output) {
  const auto folders = checkpoint_folders(output);
  for (auto it = folders.rbegin(); it != folders.rend(); ++it)
    if (complete(it->second)) return it->second.string();
  return "";
}

nlohmann::json file_record(const Fnv1a64& written) {
  return {{"bytes", written.bytes()}, {"fnv1a64", written.hex()}};
}

std::string checkpoint_damage(const std::string& directory, CheckDepth depth) {
  const fs::path folder(directory);
  std::ifstream in(folder / "manifest.json");
  const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object()) return "manifest.json: missing or not JSON";
  if (!manifest.contains("files")) return "";  // written before manifests listed their files
  const auto& files = manifest["files"];
  if (!files.is_object()) return "manifest.json: its \"files\" is not an object";
  std::vector<std::pair<std::string, RecordedFile>> expected;
  for (const auto& [name, entry] : files.items()) {
    const auto file = recorded_file(entry);
    if (!file) return "manifest.json: the entry of " + name + " lacks bytes or fnv1a64";
    expected.emplace_back(name, *file);
  }
  // Every size before any checksum: a truncated file, the usual damage, then costs no reading.
  for (const auto& [name, file] : expected)
    if (auto damage = size_damage(folder, name, file); !damage.empty()) return damage;
  if (depth == CheckDepth::sizes) return "";
  for (const auto& [name, file] : expected)
    if (auto damage = checksum_damage(folder, name, file); !damage.empty()) return damage;
  return "";
}

IntactCheckpoint newest_intact_checkpoint(const std::string& output) {
  IntactCheckpoint found;
  const auto folders = checkpoint_folders(output);
  for (auto it = folders.rbegin(); it != folders.rend(); ++it) {
    if (!complete(it->second)) continue;
    auto damage = checkpoint_damage(it->second.string(), CheckDepth::checksums);
    if (damage.empty()) {
      found.directory = it->second.string();
      break;
    }
    found.skipped.push_back({it->second.string(), std::move(damage)});
  }
  return found;
}

nlohmann::json read_manifest(const std::string& directory) {
  const fs::path path = fs::path(directory) / "manifest.json";
  std::ifstream in(path);
  TESSERA_CHECK(in, "checkpoint '" << directory
                                   << "' has no manifest.json (an interrupted write; "
                                      "use --restart latest to take the newest complete one)");
  const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(!manifest.is_discarded() && manifest.is_object() && manifest.contains("iteration"),
                "checkpoint manifest '" << path.string() << "' is not a Tessera manifest");
  return manifest;
}

void write_manifest(const std::string& directory, const nlohmann::json& manifest) {
  write_json_atomically((fs::path(directory) / "manifest.json").string(), manifest);
}

void prune_checkpoints(const std::string& output, int keep, const std::string& run_id) {
  const auto folders = checkpoint_folders(output);
  int intact_seen = 0;
  int64_t oldest_kept = INT64_MAX;
  for (auto it = folders.rbegin(); it != folders.rend() && intact_seen < keep; ++it)
    if (complete(it->second) && checkpoint_damage(it->second.string(), CheckDepth::sizes).empty()) {
      ++intact_seen;
      oldest_kept = it->first;
    }
  if (intact_seen < keep) return;
  for (const auto& [iteration, folder] : folders) {
    if (iteration >= oldest_kept) break;
    if (complete(folder) && checkpoint_run_id(folder.string()) != run_id) continue;
    std::error_code error;
    fs::remove_all(folder, error);  // best effort: an old checkpoint left behind is harmless
  }
}

std::vector<std::string> set_aside_checkpoints_after(const std::string& output, int64_t iteration,
                                                     const std::string& into) {
  std::vector<std::string> moved;
  for (const auto& [number, folder] : checkpoint_folders(output)) {
    if (number <= iteration) continue;
    fs::create_directories(into);
    const fs::path target = fs::path(into) / folder.filename();
    std::error_code error;
    fs::rename(folder, target, error);
    TESSERA_CHECK(!error, "cannot move checkpoint '" << folder.string() << "' to '"
                                                     << target.string() << "': " << error.message()
                                                     << "; move or remove it by hand");
    moved.push_back(folder.filename().string());
  }
  return moved;
}

std::string checkpoint_run_id(const std::string& directory) {
  std::ifstream in(fs::path(directory) / "manifest.json");
  const auto manifest = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (manifest.is_discarded() || !manifest.is_object() || !manifest.contains("run") ||
      !manifest["run"].is_object())
    return "";
  const auto& run = manifest["run"];
  return run.contains("run_id") && run["run_id"].is_string() ? run["run_id"].get<std::string>()
                                                             : "";
}

}  // namespace tessera::io
