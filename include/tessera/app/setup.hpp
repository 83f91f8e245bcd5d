#pragma once
/// The first step of every command: from the command line to a complete, checked set-up (the
/// case, the problem with its interface terms, the decomposition and the training plan).
/// `run`, `check` and `partition` share it, so they accept and refuse the same cases.
#include <map>
#include <string>
#include <vector>

#include "tessera/app/command_line.hpp"
#include "tessera/app/decomposition.hpp"
#include "tessera/app/problem.hpp"
#include "tessera/io/case.hpp"
#include "tessera/train/plan.hpp"

namespace tessera::app {

struct Setup {
  io::Case input;   ///< the validated case file, --set overrides applied
  Problem problem;  ///< every expression parsed, interface terms included
  Decomposition decomposition;
  train::TrainingPlan plan;
};

/// Reads and validates the case file named on the command line, with its --set overrides.
io::Case load(const CommandLine& line);

/// Resolves the problem, cuts the domain for `ranks` ranks, adds the interface terms and
/// translates the training section. Errors name the case file and the key. `local_rank`: this
/// rank's index on its node, which picks its GPU (parallel/device_map.hpp).
Setup prepare(io::Case input, int ranks, int local_rank = 0);

/// What the problem summary shows of one subdomain's model.
struct ModelSummary {
  std::vector<std::string> derivatives;   ///< e.g. "u_xx", in the engine's order
  std::map<std::string, int64_t> points;  ///< term -> points per resample
  int64_t parameters = 0;                 ///< trainable parameters of the network
  /// The largest single point set (a group's or an interface side's), which training.batch
  /// divides into parts.
  int64_t largest_set = 0;
};

/// Builds subdomain 0 (network, derivative engine, loss groups, interface sides), which checks
/// what only building can (network and sampler settings), and summarises it. Every subdomain
/// has the same terms, so subdomain 0 stands for all.
ModelSummary check_models(const Setup& setup);

}  // namespace tessera::app
