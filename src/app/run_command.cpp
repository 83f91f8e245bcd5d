#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "tessera/app/command_line.hpp"
#include "tessera/app/decomposition.hpp"
#include "tessera/app/evaluation.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/torch_pch.hpp"
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

}  // namespace

int run_command(const CommandLine& line) {
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

  std::vector<std::unique_ptr<train::SubdomainModel>> models;
  for (const auto& s : decomposition.partition.subdomains())
    if (decomposition.rank_of[s.id] == comm.rank())
      models.push_back(build_subdomain(c, problem, decomposition, s.id));
  std::vector<train::SubdomainModel*> owned;
  for (auto& m : models) owned.push_back(m.get());
  if (root && comm.size() > decomposition.partition.size())
    std::cout << "tessera: note: " << decomposition.partition.size() << " subdomain(s) on "
              << comm.size() << " ranks; ranks " << decomposition.partition.size() << ".."
              << comm.size() - 1 << " own none and only take part in reductions\n";

  // Interface channels: each owned side talks to the rank owning the other side.
  parallel::InterfaceExchange exchange(comm);
  for (auto* model : owned)
    for (const auto& side : model->interfaces) {
      const auto& f = decomposition.partition.interfaces()[side->interface_id()];
      const int peer = decomposition.rank_of[side->side() == 0 ? f.upper : f.lower];
      exchange.add(side->interface_id(), side->side(), peer, side->point_count() * side->quantities());
    }
  const bool has_interfaces = !decomposition.partition.interfaces().empty();

  const auto& partition = decomposition.partition;
  SubdomainOf subdomain_of = [&partition](const torch::Tensor& x) { return partition.subdomain_of(x); };
  Evaluator evaluator(comm, problem, owned, subdomain_of, decomposition.partition.size(),
                      output_grid(c, problem));

  std::unique_ptr<io::HistoryWriter> history;
  if (root) history = std::make_unique<io::HistoryWriter>(c.output.directory + "/history.jsonl");
  ProgressPrinter progress(root);
  train::TrainerCallbacks callbacks;
  callbacks.errors = [&] { return evaluator.relative_errors(); };
  callbacks.on_log = [&](const train::LogRecord& record) {
    if (!root) return;
    history->append(history_json(record));
    progress.print(record);
  };
  train::Trainer trainer(comm, owned, decomposition.partition.size(), problem.term_names,
                         training_plan(c, problem), callbacks, has_interfaces ? &exchange : nullptr);
  if (root) print_problem_summary(std::cout, c, problem, decomposition);
  trainer.run();
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
  io::write_grid_output(comm, c.output.directory, c.name, evaluator.layout(),
                        evaluator.output_contribution(), info);

  if (root) {
    nlohmann::json run = {{"case", c.effective},
                          {"case_file", c.file},
                          {"versions", versions(comm.size())},
                          {"started", started},
                          {"finished", utc_now()},
                          {"iterations", trainer.iterations_done()},
                          {"wall_s", final_record.wall_s},
                          {"final", history_json(final_record)}};
    io::write_json_atomically(c.output.directory + "/run.json", run);
    const auto xmf = std::filesystem::absolute(c.output.directory + "/" + c.name + ".xmf");
    std::cout << "tessera: wrote " << xmf.lexically_normal().string()
              << " (open it in ParaView)\n";
  }
  return 0;
}

}  // namespace tessera::app
