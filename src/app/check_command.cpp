#include <iostream>

#include "tessera/app/command_line.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

int check_command(const CommandLine& line) {
  const io::Case c = io::load_case(line.case_file, line.overrides);
  Problem problem = build_problem(c);
  // A case with data-parallel replicas is checked for the smallest rank count it can run on
  // (a multiple of ranks_per_subdomain), so `tessera check` works without mpiexec.
  const int replicas = c.decomposition.ranks_per_subdomain;
  const int world = parallel::Communicator::world().size();
  const int ranks = (world + replicas - 1) / replicas * replicas;
  const Decomposition decomposition = build_decomposition(c, problem, ranks);
  if (parallel::is_root() && ranks != world)
    std::cout << "(checked for " << ranks << " ranks: ranks_per_subdomain is " << replicas << ")\n";
  add_interface_terms(problem, c, decomposition);
  (void)training_plan(c, problem);
  if (parallel::is_root()) {
    // The summary builds subdomain 0, which validates network and sampler settings too.
    print_problem_summary(std::cout, c, problem, decomposition);
    std::cout << "case is valid\n";
  }
  return 0;
}

}  // namespace tessera::app
