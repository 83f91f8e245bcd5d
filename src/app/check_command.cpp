// `tessera check`: the same set-up as `run`, then subdomain 0 built and the summary printed;
// nothing is trained or written.
#include "tessera/app/command_line.hpp"
#include "tessera/app/console.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/app/warm_start.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

int check_command(const CommandLine& line) {
  Console console(parallel::is_root());
  io::Case input = load(line);
  // A case with data-parallel replicas is checked for the smallest rank count it can run on
  // (a multiple of ranks_per_subdomain), so `tessera check` works without mpiexec.
  const int replicas = input.decomposition.ranks_per_subdomain;
  // --ranks N checks (and sizes memory) for a job of N ranks without starting one.
  const int world = line.ranks > 0 ? line.ranks : parallel::Communicator::world().size();
  const int ranks = (world + replicas - 1) / replicas * replicas;
  const Setup setup = prepare(std::move(input), ranks);
  if (ranks != world)
    console.out() << "(checked for " << ranks << " ranks: ranks_per_subdomain is " << replicas
                  << ")\n";
  const ModelSummary models = check_models(setup);
  const WarmStart warm_start = plan_warm_start(setup);
  print_problem_summary(console.out(), setup, models);
  warn_partial_interfaces(console, setup);
  if (warm_start.on()) console.out() << "network.init: " << warm_start.description << "\n";
  console.out() << "case is valid\n";
  return 0;
}

}  // namespace tessera::app
