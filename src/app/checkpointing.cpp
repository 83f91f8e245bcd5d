#include "tessera/app/checkpointing.hpp"

#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/checkpoint_files.hpp"

namespace tessera::app {
namespace fs = std::filesystem;

namespace {

std::string subdomain_file(const std::string& directory, int id) {
  return (fs::path(directory) / ("subdomain_" + std::to_string(id) + ".pt")).string();
}

std::string shared_file(const std::string& directory) {
  return (fs::path(directory) / "shared.pt").string();
}

/// Fault injection for the tests: TESSERA_FAULT=kill_before_manifest@<iteration> kills rank 0
/// in the checkpoint of that iteration after every subdomain file is written and before the
/// manifest, as a node failure or `kill -9` would.
void maybe_inject_fault(int64_t iteration) {
  const char* fault = std::getenv("TESSERA_FAULT");
  if (fault && std::string(fault) == "kill_before_manifest@" + std::to_string(iteration))
    std::raise(SIGKILL);
}

}  // namespace

void write_checkpoint(const parallel::Communicator& comm, const std::string& output,
                      train::CheckpointState& state, const nlohmann::json& identity,
                      const nlohmann::json& run) {
  const auto& position = state.position;
  const std::string directory = io::checkpoint_directory(output, position.iteration);
  if (comm.rank() == 0) {
    std::error_code error;
    fs::remove(fs::path(directory) / "manifest.json",
               error);  // rewritten: not complete until the end
    fs::create_directories(directory, error);
    TESSERA_CHECK(!error,
                  "cannot create checkpoint folder '" << directory << "': " << error.message());
  }
  comm.barrier();
  for (auto& [id, archive] : state.subdomains) archive->save_to(subdomain_file(directory, id));
  if (state.shared) state.shared->save_to(shared_file(directory));
  // The manifest only after every rank's files are complete: a checkpoint without it never counts.
  comm.barrier();
  if (comm.rank() != 0) return;
  maybe_inject_fault(position.iteration);
  nlohmann::json manifest = identity;
  manifest["run"] = run;
  manifest["iteration"] = position.iteration;
  manifest["stage"] = position.stage;
  manifest["stage_step"] = position.stage_step;
  manifest["adam_steps"] = position.adam_steps;
  manifest["weights"] = position.weights;
  manifest["shared"] = static_cast<bool>(state.shared);
  manifest["ranks"] = comm.size();
  io::write_manifest(directory, manifest);
  io::prune_checkpoints(output, 2, run.value("run_id", std::string()));
}

train::RestoredCheckpoint read_checkpoint(const std::string& directory,
                                          const std::vector<int>& owned,
                                          const nlohmann::json& identity) {
  const auto manifest = io::read_manifest(directory);
  for (const auto& [key, value] : identity.items())
    TESSERA_CHECK(manifest.contains(key) && manifest[key] == value,
                  "checkpoint '" << directory << "' was written for a different problem: its "
                                 << key << " is "
                                 << (manifest.contains(key) ? manifest[key].dump() : "missing")
                                 << ", this run's is " << value.dump()
                                 << "; restart with the same case (the rank count may differ)");
  train::RestoredCheckpoint restored;
  restored.position.iteration = manifest.at("iteration").get<int64_t>();
  restored.position.stage = manifest.at("stage").get<int64_t>();
  restored.position.stage_step = manifest.at("stage_step").get<int64_t>();
  restored.position.adam_steps = manifest.at("adam_steps").get<int64_t>();
  restored.position.weights = manifest.at("weights").get<std::map<std::string, double>>();
  auto load = [&](const std::string& file) {
    auto archive = std::make_shared<torch::serialize::InputArchive>();
    try {
      archive->load_from(file);
    } catch (const c10::Error& e) {
      TESSERA_FAIL("checkpoint file '" << file
                                       << "' cannot be read: " << e.what_without_backtrace());
    }
    return archive;
  };
  for (int id : owned) restored.subdomains[id] = load(subdomain_file(directory, id));
  if (manifest.value("shared", false)) restored.shared = load(shared_file(directory));
  return restored;
}

std::optional<train::RestoredCheckpoint> restore_checkpoint(const std::string& directory,
                                                            const RankModels& rank,
                                                            const nlohmann::json& identity,
                                                            Console& console) {
  if (directory.empty()) return std::nullopt;
  auto restored = read_checkpoint(directory, rank.owned_ids(), identity);
  console.out() << "tessera: continuing from the checkpoint at iteration "
                << restored.position.iteration << "\n";
  return restored;
}

}  // namespace tessera::app
