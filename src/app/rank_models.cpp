#include "tessera/app/rank_models.hpp"

#include "tessera/app/model.hpp"
#include "tessera/core/timer.hpp"
#include "tessera/core/torch_pch.hpp"

namespace tessera::app {
namespace {

/// Seconds between progress lines while a rank builds its subdomains.
constexpr double progress_every_s = 5.0;

}  // namespace

std::vector<train::SubdomainModel*> RankModels::owned() const {
  std::vector<train::SubdomainModel*> pointers;
  for (const auto& m : models) pointers.push_back(m.get());
  return pointers;
}

std::vector<int> RankModels::owned_ids() const {
  std::vector<int> ids;
  for (const auto& m : models) ids.push_back(m->id);
  return ids;
}

RankModels build_rank_models(const parallel::Communicator& comm, const Setup& setup,
                             Console& console) {
  const auto& d = setup.decomposition;
  const auto& p = setup.problem;
  RankModels rank;
  rank.replica = physics::Replica{comm.rank() % d.replicas, d.replicas};
  rank.group_first = comm.rank() - rank.replica.index;
  rank.groups = comm.size() / d.replicas;
  if (!p.parameters.empty())
    rank.parameters = std::make_shared<physics::SharedParameters>(p.parameters, p.dtype, p.device);
  std::size_t mine = 0;
  for (const auto& s : d.partition.subdomains()) mine += d.rank_of[s.id] == rank.group_first;
  // Many subdomains take a while to build: say how far rank 0 is, every few seconds.
  const double started = core::now_seconds();
  double reported = started;
  for (const auto& s : d.partition.subdomains()) {
    if (d.rank_of[s.id] != rank.group_first) continue;
    // With slices every rank holds every point and evaluates its own slices of them.
    const auto points = d.slices > 0 ? physics::Replica{} : rank.replica;
    rank.models.push_back(build_subdomain(setup.input, p, d, s.id, points, rank.parameters));
    if (console.root() && core::now_seconds() - reported > progress_every_s) {
      reported = core::now_seconds();
      console.out() << "tessera: set-up: " << rank.models.size() << " of " << mine
                    << " subdomains of rank 0 built (" << static_cast<int>(reported - started)
                    << " s)" << std::endl;
    }
  }
  return rank;
}

void note_idle_ranks(Console& console, const Setup& setup, const RankModels& rank) {
  const auto& d = setup.decomposition;
  if (rank.groups <= d.partition.size()) return;
  console.out() << "tessera: note: " << d.partition.size() << " subdomain(s) on " << rank.groups
                << " rank group(s); ranks " << d.partition.size() * d.replicas << ".."
                << rank.groups * d.replicas - 1 << " own none and only take part in reductions\n";
}

RankLinks link_ranks(const parallel::Communicator& comm, const Setup& setup,
                     const RankModels& rank) {
  const auto& d = setup.decomposition;
  RankLinks links;
  if (!d.partition.interfaces().empty()) {
    links.exchange = std::make_unique<parallel::InterfaceExchange>(comm);
    for (const auto& model : rank.models)
      for (const auto& side : model->interfaces) {
        const auto& f = d.partition.interfaces()[side->interface_id()];
        const int peer = d.rank_of[side->side() == 0 ? f.upper : f.lower] + rank.replica.index;
        links.exchange->add(side->interface_id(), side->side(), peer,
                            side->point_count() * side->quantities());
      }
  }
  const auto group = comm.split(rank.group_first, rank.replica.index);
  if (d.replicas > 1) links.replica_sum = std::make_unique<parallel::GradientAllReduce>(group);
  if (rank.parameters && comm.size() > 1)
    links.parameter_sum = std::make_unique<parallel::GradientAllReduce>(comm);
  links.sync.replicas = links.replica_sum.get();
  links.sync.parameters = rank.parameters.get();
  links.sync.parameter_sum = links.parameter_sum.get();
  links.sync.parameters_in_quasi_newton = d.partition.size() == 1;
  if (d.slices > 0)
    links.sync.slices =
        train::SliceShare::of(d.slices, rank.replica.index, rank.replica.count, group);
  return links;
}

train::TrainingJob training_job(const parallel::Communicator& comm, const Setup& setup,
                                const RankModels& rank, const RankLinks& links) {
  return {comm,
          rank.owned(),
          setup.decomposition.partition.size(),
          setup.problem.term_names,
          links.exchange.get(),
          links.sync};
}

}  // namespace tessera::app
