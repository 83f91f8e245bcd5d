#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "tessera/app/checkpointing.hpp"
#include "tessera/app/command_line.hpp"
#include "tessera/app/decomposition.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/stop_signal.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/io/checkpoint_files.hpp"
#include "tessera/io/json_files.hpp"

namespace tessera::app {
namespace {

std::string utc_now() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

nlohmann::json versions(int ranks) {
  const auto mpi = parallel::mpi_version();
  return {{"tessera", TESSERA_VERSION_STRING},
          {"libtorch", TORCH_VERSION},
          {"mpi", mpi.standard},
          {"mpi_library", mpi.library},
          {"ranks", ranks},
          {"threads_per_rank", torch::get_num_threads()}};
}

/// What a checkpoint must match to continue this run (the rank count need not).
nlohmann::json checkpoint_identity(const io::Case& c, const Decomposition& d) {
  nlohmann::json networks = nlohmann::json::array();
  for (const auto& s : d.partition.subdomains()) {
    auto spec = c.network;
    if (auto it = c.subdomains.find(s.id); it != c.subdomains.end() && it->second.network)
      spec = *it->second.network;
    networks.push_back(spec.hidden);
  }
  return {{"case", c.name},
          {"subdomains", d.partition.size()},
          {"networks", networks},
          {"stages", c.training.stages.size()},
          {"dtype", c.dtype}};
}

}  // namespace

int run_command(const CommandLine& line) {
  // SIGTERM / SIGUSR1 (Slurm's warning): stop at the next log iteration with a checkpoint.
  core::install_stop_handlers();
  const auto comm = parallel::Communicator::world();
  const bool root = comm.rank() == 0;
  const std::string started = utc_now();
  const io::Case c = io::load_case(line.case_file, line.overrides);
  Problem problem = build_problem(c);
  const Decomposition decomposition = build_decomposition(c, problem, comm.size());
  add_interface_terms(problem, c, decomposition);
  // A bad output directory must fail now, not after hours of training.
  if (root) io::ensure_output_directory(c.output.directory);
  comm.barrier();

  // Data-parallel groups: ranks first..first+k-1 all train the same subdomains, replica r
  // keeping slice r of every sample.
  const int replicas = decomposition.replicas;
  const physics::Replica replica{comm.rank() % replicas, replicas};
  const int group_first = comm.rank() - replica.index;
  std::shared_ptr<physics::SharedParameters> parameters;
  if (!problem.parameters.empty())
    parameters = std::make_shared<physics::SharedParameters>(problem.parameters, problem.dtype,
                                                             problem.device);

  std::vector<std::unique_ptr<train::SubdomainModel>> models;
  for (const auto& s : decomposition.partition.subdomains())
    if (decomposition.rank_of[s.id] == group_first)
      models.push_back(build_subdomain(c, problem, decomposition, s.id, replica, parameters));
  std::vector<train::SubdomainModel*> owned;
  for (auto& m : models) owned.push_back(m.get());
  const int groups = comm.size() / replicas;
  if (root && groups > decomposition.partition.size())
    std::cout << "tessera: note: " << decomposition.partition.size() << " subdomain(s) on "
              << groups << " rank group(s); ranks " << decomposition.partition.size() * replicas
              << ".." << comm.size() - 1 << " own none and only take part in reductions\n";

  // Interface channels: each owned side talks to the same replica of the other side's group.
  parallel::InterfaceExchange exchange(comm);
  for (auto* model : owned)
    for (const auto& side : model->interfaces) {
      const auto& f = decomposition.partition.interfaces()[side->interface_id()];
      const int peer = decomposition.rank_of[side->side() == 0 ? f.upper : f.lower] + replica.index;
      exchange.add(side->interface_id(), side->side(), peer,
                   side->point_count() * side->quantities());
    }
  const bool has_interfaces = !decomposition.partition.interfaces().empty();

  // DDP-style sums: network gradients over the replica group, shared parameters' over all.
  const auto group = comm.split(group_first, replica.index);
  std::unique_ptr<parallel::GradientAllReduce> replica_sum, parameter_sum;
  if (replicas > 1) replica_sum = std::make_unique<parallel::GradientAllReduce>(group);
  if (parameters && comm.size() > 1)
    parameter_sum = std::make_unique<parallel::GradientAllReduce>(comm);
  train::GradientSync sync{replica_sum.get(), parameters.get(), parameter_sum.get(),
                           decomposition.partition.size() == 1 && groups == 1};

  const auto& partition = decomposition.partition;
  auto layout = output_grid(c, problem, &comm);
  // Grid points outside an irregular domain get no subdomain (NaN in the output); mesh points
  // all belong to the domain (its boundary as the mesher's chords), so nothing is masked there.
  const bool mask_outside = !layout.mesh;
  SubdomainOf subdomain_of = [&partition, &problem, mask_outside](const torch::Tensor& x) {
    return mask_outside ? subdomain_in_domain(partition, *problem.domain, x)
                        : partition.subdomain_of(x);
  };
  // One replica per group evaluates the output and the errors; the others add nothing.
  Evaluator evaluator(comm, problem,
                      replica.index == 0 ? owned : std::vector<train::SubdomainModel*>{},
                      subdomain_of, decomposition.partition.size(), std::move(layout));

  const auto identity = checkpoint_identity(c, decomposition);
  std::optional<train::RestoredCheckpoint> restored;
  if (!line.restart.empty()) {
    std::vector<int> ids;
    for (auto* model : owned) ids.push_back(model->id);
    restored = read_checkpoint(line.restart, c.output.directory, ids, identity);
    if (root)
      std::cout << "tessera: continuing from the checkpoint at iteration "
                << restored->position.iteration << "\n";
  }

  std::unique_ptr<io::HistoryWriter> history;
  if (root)
    history = std::make_unique<io::HistoryWriter>(c.output.directory + "/history.jsonl",
                                                  restored ? restored->position.iteration : -1);
  ProgressPrinter progress(root);
  train::TrainerCallbacks callbacks;
  callbacks.errors = [&] { return evaluator.relative_errors(); };
  callbacks.on_checkpoint = [&](train::CheckpointState& state) {
    write_checkpoint(comm, c.output.directory, state, identity);
  };
  callbacks.on_log = [&](const train::LogRecord& record) {
    if (!root) return;
    history->append(history_json(record));
    progress.print(record);
  };
  train::Trainer trainer(comm, owned, decomposition.partition.size(), problem.term_names,
                         training_plan(c, problem), callbacks, has_interfaces ? &exchange : nullptr,
                         sync);
  if (root) print_problem_summary(std::cout, c, problem, decomposition);
  if (restored) trainer.resume(std::move(*restored));
  trainer.run();
  if (root && !trainer.stop_reason().empty())
    std::cout << "tessera: stopped early (" << trainer.stop_reason() << ") at iteration "
              << trainer.iterations_done() << "; checkpoint written to "
              << io::checkpoint_directory(c.output.directory, trainer.iterations_done())
              << "; continue with: tessera run " << line.case_file << " --restart latest\n";
  print_timing_table(comm, trainer.last_record());

  const auto& final_record = trainer.last_record();
  io::GridFileInfo info;
  info.case_name = c.name;
  info.attributes_double["iterations"] = static_cast<double>(trainer.iterations_done());
  info.attributes_double["wall_seconds"] = final_record.wall_s;
  for (const auto& [field, error] : final_record.rel_l2)
    info.attributes_double["rel_l2_" + field] = error;
  if (final_record.interface_jump >= 0)
    info.attributes_double["interface_jump"] = final_record.interface_jump;
  info.attributes_string["decomposition"] = decomposition.method;
  info.parameters = final_record.parameters;
  io::write_grid_output(comm, c.output.directory, c.name, evaluator.layout(),
                        evaluator.output_contribution(), info);

  if (root) {
    nlohmann::json run = {
        {"case", c.effective},
        {"case_file", c.file},
        {"versions", versions(comm.size())},
        {"started", started},
        {"finished", utc_now()},
        {"iterations", trainer.iterations_done()},
        {"wall_s", final_record.wall_s},
        {"final", history_json(final_record)},
        {"synchronisation",
         {{"ranks_per_subdomain", replicas},
          {"adam_steps", trainer.adam_steps()},
          {"replica_gradient_allreduces", replica_sum ? replica_sum->calls() : 0},
          {"parameter_gradient_allreduces", parameter_sum ? parameter_sum->calls() : 0}}}};
    io::write_json_atomically(c.output.directory + "/run.json", run);
    const auto xmf = std::filesystem::absolute(c.output.directory + "/" + c.name + ".xmf");
    std::cout << "tessera: wrote " << xmf.lexically_normal().string() << " (open it in ParaView)\n";
  }
  return 0;
}

}  // namespace tessera::app
