#pragma once
/// The subdomains one rank trains and what connects them to the other ranks: interface
/// channels to the neighbours' ranks and the DDP-style gradient sums.
#include <memory>
#include <vector>

#include "tessera/app/console.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/parallel/environment.hpp"
#include "tessera/parallel/exchange.hpp"
#include "tessera/parallel/gradient_all_reduce.hpp"
#include "tessera/train/trainer.hpp"

namespace tessera::app {

struct RankModels {
  /// Data-parallel groups: ranks first..first+k-1 all train the same subdomains, replica r
  /// keeping slice r of every sample.
  physics::Replica replica;
  int group_first = 0;
  int groups = 1;                                         ///< rank groups in the job
  std::shared_ptr<physics::SharedParameters> parameters;  ///< null: none
  std::vector<std::unique_ptr<train::SubdomainModel>> models;

  std::vector<train::SubdomainModel*> owned() const;
  std::vector<int> owned_ids() const;
};

/// Builds the networks and loss groups of the subdomains this rank's group trains; rank 0 prints
/// its progress every few seconds when that takes long.
RankModels build_rank_models(const parallel::Communicator& comm, const Setup& setup,
                             Console& console);

/// Says (on rank 0) when some rank groups own no subdomain and only take part in reductions.
void note_idle_ranks(Console& console, const Setup& setup, const RankModels& rank);

struct RankLinks {
  std::unique_ptr<parallel::InterfaceExchange> exchange;       ///< null without interfaces
  std::unique_ptr<parallel::GradientAllReduce> replica_sum;    ///< null with one replica
  std::unique_ptr<parallel::GradientAllReduce> parameter_sum;  ///< null without parameters
  train::GradientSync sync;
};

/// Opens the interface channels (each owned side talks to the same replica of the other
/// side's group) and the gradient sums (networks over the replica group, shared parameters
/// over the world). Collective over comm.
RankLinks link_ranks(const parallel::Communicator& comm, const Setup& setup,
                     const RankModels& rank);

/// What the trainer trains on this rank: its subdomains, the job's terms and the links.
train::TrainingJob training_job(const parallel::Communicator& comm, const Setup& setup,
                                const RankModels& rank, const RankLinks& links);

}  // namespace tessera::app
