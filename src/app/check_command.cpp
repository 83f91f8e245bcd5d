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
  const int ranks = parallel::Communicator::world().size();
  const Decomposition decomposition = build_decomposition(c, problem, ranks);
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
