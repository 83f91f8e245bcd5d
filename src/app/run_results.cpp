#include "tessera/app/run_results.hpp"

#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "tessera/app/console.hpp"
#include "tessera/app/field_networks.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/point_output.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/io/json_files.hpp"
#include "tessera/io/write_error.hpp"

namespace tessera::app {
namespace {

nlohmann::json versions(int ranks) {
  const auto mpi = parallel::mpi_version();
  return {{"tessera", TESSERA_VERSION_STRING},
          {"libtorch", TORCH_VERSION},
          {"mpi", mpi.standard},
          {"mpi_library", mpi.library},
          {"ranks", ranks},
          {"threads_per_rank", torch::get_num_threads()}};
}

/// Where each rank ran: [{"rank", "host", "device"}] on rank 0, with "slices" [first, end)
/// where the ranks share the points by slices. Collective.
nlohmann::json rank_placement(const parallel::Communicator& comm, const torch::Device& device,
                              const train::SliceShare& slices) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const auto hosts = comm.gather_to_root(host);
  const auto devices = comm.gather_to_root(device.str());
  const auto shares =
      comm.gather_to_root(std::to_string(slices.first) + " " + std::to_string(slices.end));
  nlohmann::json ranks = nlohmann::json::array();
  for (std::size_t r = 0; r < hosts.size(); ++r) {
    ranks.push_back({{"rank", r}, {"host", hosts[r]}, {"device", devices[r]}});
    if (!slices.on()) continue;
    std::istringstream share(shares[r]);
    int first = 0, end = 0;
    share >> first >> end;
    ranks.back()["slices"] = {first, end};
  }
  return ranks;
}

/// "completed", or "stopped" with the reason and the checkpoint to continue from (relative to
/// the output folder `output`).
nlohmann::json run_status(const train::Trainer& trainer, const std::string& output) {
  if (trainer.stop_reason().empty()) return {{"status", "completed"}};
  const std::filesystem::path checkpoint =
      io::checkpoint_directory(output, trainer.iterations_done());
  return {{"status", "stopped"},
          {"stop_reason", trainer.stop_reason()},
          {"checkpoint", checkpoint.lexically_relative(output).generic_string()}};
}

/// output.points: <name>_points.h5 (or .csv, as the points file) in the output folder.
std::string point_output_path(const io::Case& c) {
  const bool csv = io::is_csv_path(*c.output.points_file, c.file + ": output.points");
  return c.output.directory + "/" + c.name + "_points" + (csv ? ".csv" : ".h5");
}

/// The fields at output.points, written by rank 0. Collective over comm.
void write_point_output(const parallel::Communicator& comm, const Setup& setup,
                        Evaluator& evaluator) {
  const auto& c = setup.input;
  const auto& set = *setup.problem.output_points;
  const auto points = torch::tensor(set.points, torch::kFloat64).reshape({set.count, set.dims});
  const auto columns = named_columns(evaluator.values_at(points), setup.problem.symbols.fields);
  const std::string path = point_output_path(c);
  try {
    write_on_root(comm, [&] {
      io::write_point_values(path, setup.problem.domain->input_names(), set, columns);
    });
  } catch (const io::WriteError& e) {
    throw io::WriteError(std::string(e.what()) +
                         "; the checkpoints are kept: make room, then write the output with "
                         "--restart latest");
  }
}

}  // namespace

void prepare_output_directory(const parallel::Communicator& comm, const std::string& directory) {
  if (comm.rank() == 0) io::ensure_output_directory(directory);
  comm.barrier();
}

void reserve_run_record_room(const std::string& output) {
  const std::string path = output + "/run.json";
  std::error_code ec;
  const auto now = std::filesystem::file_size(path, ec);
  // The record of a failure is this one with the time and the message added. The room is
  // wanted on a disk that is nearly full, so it is kept as small as that.
  io::reserve_json_room(path, (ec ? 0 : now) + 2048);
}

nlohmann::json checkpoint_identity(const Setup& setup) {
  const auto& c = setup.input;
  const auto& d = setup.decomposition;
  nlohmann::json networks = nlohmann::json::array();
  for (const auto& s : d.partition.subdomains()) {
    auto spec = c.network;
    if (auto it = c.subdomains.find(s.id); it != c.subdomains.end() && it->second.network)
      spec = *it->second.network;
    networks.push_back(spec.hidden);
  }
  nlohmann::json identity = {{"case", c.name},
                             {"subdomains", d.partition.size()},
                             {"networks", networks},
                             {"stages", c.training.stages.size()},
                             {"dtype", io::name(c.dtype)}};
  // The fields of some inputs have networks of their own (absent from older checkpoints, whose
  // cases have none).
  if (!c.field_inputs.empty()) identity["field_inputs"] = field_inputs_record(c, c.network);
  // The stacked networks of an fbpinn decomposition: one row of parameters per window.
  if (!d.windows.empty()) {
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& level : d.windows) cells.push_back(level.cells());
    identity["windows"] = cells;
  }
  return identity;
}

std::string write_results(const parallel::Communicator& comm, const Setup& setup,
                          const train::Trainer& trainer, Evaluator& evaluator,
                          const RankLinks& links, const nlohmann::json& record) {
  const auto& c = setup.input;
  const auto& final_record = trainer.last_record();
  io::GridFileInfo info;
  info.case_name = c.name;
  info.attributes_double["iterations"] = static_cast<double>(trainer.iterations_done());
  info.attributes_double["wall_seconds"] = final_record.wall_s;
  for (const auto& [field, error] : final_record.rel_l2)
    info.attributes_double["rel_l2_" + field] = error;
  if (final_record.rel_l2_stacked >= 0)
    info.attributes_double["rel_l2_stacked"] = final_record.rel_l2_stacked;
  if (final_record.interface_jump >= 0)
    info.attributes_double["interface_jump"] = final_record.interface_jump;
  info.attributes_string["decomposition"] = io::name(setup.decomposition.method);
  info.parameters = final_record.parameters;
  try {
    io::write_grid_output(comm, c.output.directory, c.name, evaluator.layout(),
                          evaluator.output_contribution(), info);
  } catch (const io::WriteError& e) {
    throw io::WriteError(std::string(e.what()) +
                         "; the checkpoints are kept: make room, then write the output with "
                         "--restart latest");
  }

  if (setup.problem.output_points) write_point_output(comm, setup, evaluator);

  const auto xmf = std::filesystem::absolute(c.output.directory + "/" + c.name + ".xmf");
  const auto placement = rank_placement(comm, setup.problem.device, links.sync.slices);
  if (comm.rank() != 0) return xmf.lexically_normal().string();
  const auto calls = [](const auto& sum) { return sum ? sum->calls() : 0; };
  nlohmann::json run = record;
  nlohmann::json precision = nlohmann::json::array();
  for (const auto& stage : c.training.stages)
    precision.push_back(stage_precision(stage, setup.problem));
  run.update({{"versions", versions(comm.size())},
              {"precision", precision},
              {"ranks", placement},
              {"finished", utc_now()},
              {"iterations", trainer.iterations_done()},
              {"wall_s", final_record.wall_s},
              {"final", history_json(final_record)},
              {"synchronisation",
               {{"ranks_per_subdomain", setup.decomposition.replicas},
                {"slices", setup.decomposition.slices},
                {"adam_steps", trainer.adam_steps()},
                {"replica_gradient_allreduces", calls(links.replica_sum)},
                {"parameter_gradient_allreduces", calls(links.parameter_sum)},
                {"quiet_adam_iterations", trainer.quiet_reads().iterations},
                {"quiet_adam_reads",
                 {{"values", trainer.quiet_reads().values},
                  {"messages", trainer.quiet_reads().messages}}}}}});
  run.update(run_status(trainer, c.output.directory));
  io::write_json_atomically(c.output.directory + "/run.json", run);
  return xmf.lexically_normal().string();
}

}  // namespace tessera::app
