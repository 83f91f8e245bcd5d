#include <iostream>

#include "tessera/app/command_line.hpp"
#include "tessera/app/model.hpp"
#include "tessera/app/progress.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

int check_command(const CommandLine& line) {
  const io::Case c = io::load_case(line.case_file, line.overrides);
  const Problem problem = build_problem(c);
  // Building the model validates the network and sampler settings too.
  auto model = build_subdomain(c, problem, 0, problem.domain);
  (void)training_plan(c, problem);
  if (parallel::is_root()) {
    print_problem_summary(std::cout, c, problem, {model.get()});
    std::cout << "case is valid\n";
  }
  return 0;
}

}  // namespace tessera::app
