#include "tessera/app/trained_run.hpp"

#include <filesystem>
#include <fstream>

#include "tessera/app/checkpointing.hpp"
#include "tessera/app/run_results.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/parallel/device_map.hpp"
#include "tessera/train/subdomain_archive.hpp"

namespace tessera::app {
namespace {

namespace fs = std::filesystem;

nlohmann::json read_run_record(const std::string& directory) {
  const std::string path = (fs::path(directory) / "run.json").string();
  TESSERA_CHECK(fs::is_directory(directory),
                "'" << directory << "' is not a folder; give the output folder of a run "
                    << "(its output.directory)");
  std::ifstream in(path);
  TESSERA_CHECK(in, "'" << directory << "' has no run.json: it is not the output folder of a "
                        << "tessera run");
  const auto record = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  TESSERA_CHECK(record.is_object() && record.contains("case") && record["case"].is_object(),
                path << " is damaged or holds no \"case\"; the run's case cannot be rebuilt");
  return record;
}

/// --set may change how the model is evaluated (device, derivative engine, new definitions
/// and data),
/// never the model: the checkpoint holds networks trained for the recorded case, and keys like
/// the activation, the geometry (input scaling) or an exactly enforced value change what they
/// compute without changing their shapes.
void refuse_model_changes(const nlohmann::json& recorded, const nlohmann::json& effective) {
  for (const char* key : {"coordinates", "time", "fields", "geometry", "conditions", "constants",
                          "parameters", "network", "decomposition", "subdomains"})
    TESSERA_CHECK(
        recorded.value(key, nlohmann::json()) == effective.value(key, nlohmann::json()),
        "--set: '" << key << "' would change the trained model, which the checkpoint "
                   << "holds for the recorded case; only keys that leave it alone "
                   << "(device, training.derivatives, new definitions and data) may change");
  // Definitions and tables may be read by an exactly enforced value: new ones only.
  for (const char* section : {"definitions", "data"}) {
    if (!recorded.contains(section)) continue;
    for (const auto& [name, entry] : recorded[section].items())
      TESSERA_CHECK(
          effective.value(section, nlohmann::json::object()).value(name, nlohmann::json()) == entry,
          "--set: " << section << "." << name
                    << " may be read by the trained model (an exactly enforced value); "
                    << "add new " << section << " entries instead");
  }
}

}  // namespace

TrainedRun open_trained_run(const parallel::Communicator& comm, const std::string& directory,
                            const std::vector<std::string>& overrides, Console& console) {
  const auto record = read_run_record(directory);
  // Messages name the original case file, and relative paths in it resolve against its folder.
  // case_folder (absolute) makes them resolve from any working directory.
  std::string case_file = record.value("case_file", directory + "/run.json");
  if (record.contains("case_folder") && record["case_folder"].is_string())
    case_file = (std::filesystem::path(record["case_folder"].get<std::string>()) /
                 std::filesystem::path(case_file).filename())
                    .string();
  // Data-parallel replicas only share the training work: one copy of each network is read, so
  // any rank count serves.
  auto document = record["case"];
  if (document.contains("decomposition") && document["decomposition"].is_object())
    document["decomposition"].erase("ranks_per_subdomain");
  auto input = io::case_from_json(document, case_file, overrides);
  refuse_model_changes(document, input.effective);
  const auto found = io::newest_intact_checkpoint(directory);
  TESSERA_CHECK(!found.directory.empty(),
                "'" << directory << "' holds no complete and intact checkpoint"
                    << (found.skipped.empty() ? "" : " (" + found.skipped.front().reason + ")")
                    << ": the run ended before it wrote one; nothing trained can be read");
  const std::string status = record.value("status", std::string());
  if (console.root() && status == "running")
    console.out() << "tessera: note: run.json says the run is still training; its newest "
                  << "checkpoint is read\n";

  TrainedRun run{directory,
                 found.directory,
                 0,
                 prepare(std::move(input), comm.size(), parallel::node_local_rank(comm)),
                 {}};
  run.rank = build_rank_models(comm, run.setup, console);
  // The stage count is left out: a run planned from a budget records its planned stages.
  auto identity = checkpoint_identity(run.setup);
  identity.erase("stages");
  auto restored =
      read_checkpoint(found.directory, run.rank.owned_ids(), identity, run.setup.problem.device);
  run.iteration = restored.position.iteration;
  for (auto* model : run.rank.owned())
    train::load_network(*restored.subdomains.at(model->id), *model);
  if (restored.shared && run.rank.parameters)
    train::load_shared_parameters(*restored.shared, run.rank.parameters->raw());
  return run;
}

}  // namespace tessera::app
