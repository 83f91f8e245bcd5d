// tessera: physics-informed neural networks by domain decomposition.
//
//   tessera run cases/poisson2d.json
//   mpiexec.mpich -n 4 tessera run cases/poisson2d.json --set training.stages.0.iterations=200
//   tessera check cases/heat1d.json
#include <iostream>

#include "tessera/app/command_line.hpp"
#include "tessera/core/error.hpp"
#include "tessera/parallel/environment.hpp"

int main(int argc, char** argv) {
  tessera::parallel::Environment environment(&argc, &argv);
  try {
    const auto line = tessera::app::parse_command_line(argc, argv);
    if (line.command == "help") {
      if (tessera::parallel::is_root()) std::cout << tessera::app::usage();
      return 0;
    }
    if (line.command == "version") {
      if (tessera::parallel::is_root()) std::cout << "tessera " << TESSERA_VERSION_STRING << "\n";
      return 0;
    }
    if (line.command == "check") return tessera::app::check_command(line);
    if (line.command == "partition") return tessera::app::partition_command(line);
    return tessera::app::run_command(line);
  } catch (const std::exception& e) {
    // One rank's failure ends the whole job with its rank and message, never a hang.
    tessera::parallel::Environment::abort_job(e.what());
  }
}
