#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>

#include "tessera/app/command_line.hpp"
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
  int mpi_major = 0, mpi_minor = 0;
  MPI_Get_version(&mpi_major, &mpi_minor);
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(library, &length);
  std::string mpi_library(library, static_cast<std::size_t>(length));
  mpi_library = mpi_library.substr(0, mpi_library.find('\n'));
  return {{"tessera", TESSERA_VERSION_STRING},
          {"libtorch", TORCH_VERSION},
          {"mpi", std::to_string(mpi_major) + "." + std::to_string(mpi_minor)},
          {"mpi_library", mpi_library},
          {"ranks", ranks},
          {"threads_per_rank", torch::get_num_threads()}};
}

}  // namespace

int run_command(const CommandLine& line) {
  const auto comm = parallel::Communicator::world();
  const bool root = comm.rank() == 0;
  const std::string started = utc_now();
  const io::Case c = io::load_case(line.case_file, line.overrides);
  const Problem problem = build_problem(c);
  // A bad output directory must fail now, not after hours of training.
  if (root) io::ensure_output_directory(c.output.directory);
  comm.barrier();

  // One network over the whole domain, owned by rank 0 (decomposition comes with the
  // partition module); other ranks take part in the reductions.
  std::vector<std::unique_ptr<train::SubdomainModel>> models;
  if (root) models.push_back(build_subdomain(c, problem, 0, problem.domain));
  std::vector<train::SubdomainModel*> owned;
  for (auto& m : models) owned.push_back(m.get());
  if (root && comm.size() > 1)
    std::cout << "tessera: note: decomposition.method \"none\" trains one network on rank 0; "
                 "the other " << comm.size() - 1 << " rank(s) only take part in reductions\n";

  SubdomainOf subdomain_of = [](const torch::Tensor& x) {
    return torch::zeros({x.size(0)}, torch::kInt64);
  };
  Evaluator evaluator(comm, problem, owned, subdomain_of, output_grid(c, problem));

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
  train::Trainer trainer(comm, owned, problem.term_names, training_plan(c, problem), callbacks);
  if (root) print_problem_summary(std::cout, c, problem, owned);
  trainer.run();

  const auto& final_record = trainer.last_record();
  io::GridFileInfo info;
  info.case_name = c.name;
  info.attributes_double["iterations"] = static_cast<double>(trainer.iterations_done());
  info.attributes_double["wall_seconds"] = final_record.wall_s;
  for (const auto& [field, error] : final_record.rel_l2)
    info.attributes_double["rel_l2_" + field] = error;
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
