// tessera: physics-informed neural networks by domain decomposition.
//
//   tessera run cases/poisson2d.json
//   mpiexec.mpich -n 4 tessera run cases/poisson2d.json --set training.stages.0.iterations=200
//   tessera check cases/heat1d.json
//   tessera evaluate results/heat1d --points probes.csv
//   tessera export results/heat1d --out heat1d.pt
#include <cstdlib>

#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/core/error.hpp"
#include "tessera/parallel/environment.hpp"

int main(int argc, char** argv) {
  using tessera::app::Command;
  tessera::parallel::Environment environment(&argc, &argv);
  try {
    const auto line = tessera::app::parse_command_line(argc, argv);
    tessera::app::Console console(tessera::parallel::is_root());
    // A launcher of another MPI library starts every process as a job of its own: refused
    // before any command reads a case or a run, rather than N runs racing for one folder.
    const std::string foreign =
        tessera::parallel::foreign_launcher(tessera::parallel::Communicator::world().size(),
                                            [](const char* name) { return std::getenv(name); });
    TESSERA_CHECK(foreign.empty(), foreign);
    switch (line.command) {
      case Command::help:
        console.out() << tessera::app::usage(line.help_for);
        return 0;
      case Command::version:
        console.out() << "tessera " << TESSERA_VERSION_STRING << "\n";
        return 0;
      case Command::check:
        return tessera::app::check_command(line);
      case Command::partition:
        return tessera::app::partition_command(line);
      case Command::run:
        return tessera::app::run_command(line);
      case Command::evaluate:
        return tessera::app::evaluate_command(line);
      case Command::export_model:
        return tessera::app::export_command(line);
      case Command::schema:
        return tessera::app::schema_command(line);
    }
    return 1;
  } catch (const std::exception& e) {
    // One rank's failure ends the whole job with its rank and message, never a hang.
    tessera::parallel::Environment::abort_job(e.what());
  }
}
