#include "tessera/io/checkpoint_files.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
  int complete_seen = 0;
  int64_t oldest_kept = INT64_MAX;
  for (auto it = folders.rbegin(); it != folders.rend() && complete_seen < keep; ++it)
    if (complete(it->second)) {
      ++complete_seen;
      oldest_kept = it->first;
    }
  if (complete_seen < keep) return;
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
