#pragma once
/// A finished run read back: its case from run.json, rebuilt for this job's ranks, with the
/// networks of its newest intact checkpoint. What `tessera evaluate` and `tessera export` start
/// from.
#include <cstdint>
#include <string>
#include <vector>

#include "tessera/app/console.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

struct TrainedRun {
  std::string directory;   ///< the run's output folder
  std::string checkpoint;  ///< the checkpoint folder the networks come from
  int64_t iteration = 0;   ///< the iteration that checkpoint was written at
  Setup setup;
  RankModels rank;
};

/// Reads `directory`'s run.json (the effective case and the case file's path, against whose
/// folder relative paths resolve), applies `overrides` (--set, e.g. device=cpu; a key that
/// would change the model, such as network.activation, is refused), prepares the
/// case for comm's ranks, builds this rank's subdomains and loads their networks (and the
/// trainable parameters) from the newest intact checkpoint, onto this rank's device. A run
/// still training is read as it stands, with a note. Errors name the folder and what is
/// missing. Collective over comm.
TrainedRun open_trained_run(const parallel::Communicator& comm, const std::string& directory,
                            const std::vector<std::string>& overrides, Console& console);

}  // namespace tessera::app
