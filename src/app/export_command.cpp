// `tessera export RUN_DIR`: a finished run's trained model as one TorchScript file, for use
// outside Tessera (torch.jit.load in Python, torch::jit::load in C++).

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/model_export.hpp"
#include "tessera/app/trained_run.hpp"
#include "tessera/core/error.hpp"

namespace tessera::app {

int export_command(const CommandLine& line) {
  const auto comm = parallel::Communicator::world();
  TESSERA_CHECK(comm.size() == 1,
                "export: one process writes the one file that holds every "
                "subdomain; run it without mpiexec (or with -n 1)");
  Console console(true);
  TrainedRun run = open_trained_run(comm, line.case_file, line.overrides, console);
  const std::string path = line.out.empty() ? run.setup.input.name + "_model.pt" : line.out;
  save_scripted_model(script_model(run.setup, run.rank.owned()), run.setup, path);
  console.out() << "tessera: exported the model at iteration " << run.iteration << " ("
                << run.setup.decomposition.partition.size() << " subdomain(s)) -> " << path
                << "; torch.jit.load(\"" << path << "\")(points) gives the fields\n";
  return 0;
}

}  // namespace tessera::app
