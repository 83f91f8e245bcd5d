#pragma once
/// Warm start (`"network": {"init": {"from": RUN_DIR}}`, docs/case-format.md, "Warm start"):
/// another run's trained networks as the starting point of this run. Only the networks are
/// loaded (their parameters and buffers); optimizer state, iteration counts, points and the
/// trainable case parameters start as in any fresh run.
#include <string>

#include "tessera/app/console.hpp"
#include "tessera/app/rank_models.hpp"
#include "tessera/app/setup.hpp"
#include "tessera/core/torch_pch.hpp"
#include "tessera/parallel/environment.hpp"

namespace tessera::app {

struct WarmStart {
  /// The source's newest intact checkpoint folder; "" when the case has no warm start.
  std::string checkpoint;
  /// -1: subdomain k starts from the source's subdomain k; otherwise every subdomain starts
  /// from this source subdomain.
  int from_subdomain = -1;
  /// What is loaded, for people: "from results/a/checkpoints/00000300 (subdomain 0 copied
  /// into 2 subdomains)".
  std::string description;

  bool on() const { return !checkpoint.empty(); }
  int source_of(int subdomain) const { return from_subdomain < 0 ? subdomain : from_subdomain; }
};

/// The warm start of `setup`'s case: the source folder's run.json and newest intact checkpoint
/// (every checksum verified), its subdomains mapped onto this run's, and its networks' architecture
/// compared with this case's. Reads files only, on the calling rank. A missing or incomplete
/// folder, an architecture that differs or subdomain counts that do not map is one error line
/// naming the case file and the key.
WarmStart plan_warm_start(const Setup& setup);

/// The same, planned on rank 0 and shared with every rank. Collective over comm; an error is
/// thrown on rank 0.
WarmStart plan_warm_start(const parallel::Communicator& comm, const Setup& setup);

/// Copies the source's networks into this rank's subdomains (each rank reads only the files of
/// the subdomains it trains), converted to this run's dtype and device. Rank 0 says what was
/// loaded. Nothing happens when `plan` is off.
void apply_warm_start(const WarmStart& plan, const RankModels& rank, const torch::Device& device,
                      Console& console);

}  // namespace tessera::app
