#include "tessera/app/checkpointing.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// Fault injection for the tests: TESSERA_FAULT=<fault>@<iteration> names a fault and the
/// checkpoint it strikes; <fault>_from@<iteration> strikes that checkpoint and every later one.
bool fault_at(const char* fault, int64_t iteration) {
  const char* chosen = std::getenv("TESSERA_FAULT");
  if (!chosen) return false;
  const std::string text = chosen;
  if (text == std::string(fault) + "@" + std::to_string(iteration)) return true;
  const std::string from = std::string(fault) + "_from@";
  if (text.rfind(from, 0) != 0) return false;
  char* end = nullptr;
  const long long first = std::strtoll(text.c_str() + from.size(), &end, 10);
  return end != text.c_str() + from.size() && *end == '\0' && iteration >= first;
}

/// The outcome of writing one archive: "" or "<file>: <reason>", and what was handed to the file.
struct ArchiveWrite {
  std::string failure;
  io::Fnv1a64 written;
};

/// Writes `archive` to `file`, hashing the bytes on their way so that the manifest can record
/// them without reading the file back. LibTorch's writer to a file throws from a destructor
/// when the file system refuses a write (a full disk), which ends the process; here every write
/// goes through fwrite and a refusal is only recorded.
/// TESSERA_FAULT=checkpoint_write_fails@<iteration> makes every write of that checkpoint fail
/// (checkpoint_write_fails_from@<iteration>: of that one and every later one).
ArchiveWrite save_archive(torch::serialize::OutputArchive& archive, const std::string& file,
                          int64_t iteration) {
  ArchiveWrite result;
  std::FILE* out = std::fopen(file.c_str(), "wb");
  if (!out) {
    result.failure = file + ": " + std::strerror(errno);
    return result;
  }
  int failure = fault_at("checkpoint_write_fails", iteration) ? ENOSPC : 0;
  archive.save_to([&](const void* data, size_t size) -> size_t {
    result.written.update(data, size);
    if (!failure && std::fwrite(data, 1, size, out) != size) failure = errno ? errno : EIO;
    return size;
  });
  if (std::fclose(out) != 0 && !failure) failure = errno ? errno : EIO;
  if (failure) result.failure = file + ": " + std::strerror(failure);
  return result;
}

/// This rank's files of a checkpoint: the first failure ("" when every file was written) and
/// the manifest's record of each file (io::file_record), by name.
struct RankFiles {
  std::string failure;
  nlohmann::json records = nlohmann::json::object();
};

/// Writes this rank's archives of `state` into `directory`, stopping at the first failure.
RankFiles write_rank_files(train::CheckpointState& state, const std::string& directory) {
  RankFiles files;
  const auto save = [&](torch::serialize::OutputArchive& archive, const std::string& file) {
    if (!files.failure.empty()) return;
    auto outcome = save_archive(archive, file, state.position.iteration);
    files.failure = std::move(outcome.failure);
    files.records[fs::path(file).filename().string()] = io::file_record(outcome.written);
  };
  for (auto& [id, archive] : state.subdomains) save(*archive, subdomain_file(directory, id));
  if (state.shared) save(*state.shared, shared_file(directory));
  return files;
}

/// Every rank's file records in one object on rank 0 (empty elsewhere): each rank hashed its
/// own files as it wrote them, so rank 0 need not read them back. Collective over comm.
nlohmann::json every_rank_records(const parallel::Communicator& comm,
                                  const nlohmann::json& records) {
  nlohmann::json all = nlohmann::json::object();
  for (const auto& text : comm.gather_to_root(records.dump()))
    all.update(nlohmann::json::parse(text));
  return all;
}

/// Takes away a checkpoint that could not be written, so that a full disk gets back what the
/// attempt took and repeated failures leave no folders behind: every rank its own files (which
/// also works where ranks do not share one file system), then rank 0 the folder.
/// Collective over comm.
void remove_failed_checkpoint(const parallel::Communicator& comm,
                              const train::CheckpointState& state, const std::string& directory) {
  std::error_code ignored;
  for (const auto& [id, archive] : state.subdomains)
    fs::remove(subdomain_file(directory, id), ignored);
  if (state.shared) fs::remove(shared_file(directory), ignored);
  comm.barrier();
  if (comm.rank() == 0) fs::remove_all(directory, ignored);
}

/// TESSERA_FAULT=kill_before_manifest@<iteration> kills rank 0
/// in the checkpoint of that iteration after every subdomain file is written and before the
/// manifest, as a node failure or `kill -9` would.
void maybe_inject_fault(int64_t iteration) {
  if (fault_at("kill_before_manifest", iteration)) std::raise(SIGKILL);
}

}  // namespace

std::string write_checkpoint(const parallel::Communicator& comm, const std::string& output,
                             train::CheckpointState& state, const nlohmann::json& identity,
                             const nlohmann::json& run, int slices) {
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
  const RankFiles mine = write_rank_files(state, directory);
  // The manifest only after every rank's files are complete: a checkpoint without it never
  // counts, so one that a rank could not write is left without it and training goes on.
  if (comm.any(!mine.failure.empty())) {
    remove_failed_checkpoint(comm, state, directory);
    return "the checkpoint at iteration " + std::to_string(position.iteration) +
           " could not be written (" +
           (mine.failure.empty() ? "another rank's files failed" : mine.failure) +
           "); training goes on, and a restart uses the last complete checkpoint";
  }
  const nlohmann::json files = every_rank_records(comm, mine.records);
  if (comm.rank() != 0) return "";
  maybe_inject_fault(position.iteration);
  nlohmann::json manifest = identity;
  manifest["run"] = run;
  manifest["iteration"] = position.iteration;
  manifest["stage"] = position.stage;
  manifest["stage_step"] = position.stage_step;
  manifest["adam_steps"] = position.adam_steps;
  manifest["training_s"] = position.training_s;
  manifest["weights"] = position.weights;
  manifest["shared"] = static_cast<bool>(state.shared);
  manifest["ranks"] = comm.size();
  manifest["files"] = files;
  if (slices > 0) manifest["slices"] = slices;
  io::write_manifest(directory, manifest);
  io::prune_checkpoints(output, 2, run.value("run_id", std::string()));
  return "";
}

train::RestoredCheckpoint read_checkpoint(const std::string& directory,
                                          const std::vector<int>& owned,
                                          const nlohmann::json& identity,
                                          const torch::Device& device) {
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
  restored.position.training_s = manifest.value("training_s", 0.0);
  restored.position.weights = manifest.at("weights").get<std::map<std::string, double>>();
  auto load = [&](const std::string& file) {
    auto archive = std::make_shared<torch::serialize::InputArchive>();
    try {
      // Onto this rank's device, whichever device wrote it (a restart on other GPUs, or on
      // CPUs after a GPU run).
      archive->load_from(file, device);
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
                                                            const torch::Device& device,
                                                            Console& console, int slices) {
  if (directory.empty()) return std::nullopt;
  auto restored = read_checkpoint(directory, rank.owned_ids(), identity, device);
  console.out() << "tessera: continuing from the checkpoint at iteration "
                << restored.position.iteration << "\n";
  const int written_with = io::read_manifest(directory).value("slices", 0);
  if (written_with > 0 && written_with != slices)
    console.out() << "tessera: note: the checkpoint was written with " << written_with
                  << " slices of the points and this run sums over " << slices
                  << ", so it agrees with a run that kept " << written_with
                  << " to rounding only; set decomposition.slices to " << written_with
                  << " (on at most " << written_with << " ranks) to continue bit for bit\n";
  return restored;
}

}  // namespace tessera::app
